-- bench/wrk-report.lua: wrk's done() hook for bench/driver.py. Owns the machine-readable lines
-- the driver parses: totals, socket errors, responses with status > 399 (wrk's "non-2xx" count)
-- and latency percentiles up to 99.99 (microseconds). Only done() is defined unless the driver
-- asks for pacing, so wrk keeps its fast path (no per-request Lua call).

-- BENCH_DELAY_MS: each connection waits that long after a response before its next request
-- (the paced point of scenario a: a fixed offered load instead of as much as the proxy takes).
local pace = tonumber(os.getenv("BENCH_DELAY_MS") or "")
if pace and pace > 0 then
   delay = function() return pace end
end

done = function(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout))
   io.write(string.format("BENCH p50=%d p75=%d p90=%d p99=%d p99.9=%d p99.99=%d max=%d mean=%.1f\n",
      latency:percentile(50), latency:percentile(75), latency:percentile(90),
      latency:percentile(99), latency:percentile(99.9), latency:percentile(99.99),
      latency.max, latency.mean))
end
