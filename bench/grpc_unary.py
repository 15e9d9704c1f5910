#!/usr/bin/env python3
"""bench/grpc_unary.py: gRPC unary calls, HTTP/2 to HTTP/2 through the proxy (issue 36 §5), Fulcrum
beside HAProxy 2.6 and nginx.

  python3 bench/grpc_unary.py [--rounds 5] [--requests 100000] [--conns 10] [--streams 100]
                        [--size 64] [--bin PATH] [--bin-b PATH]

The server is grpc-go (the reference implementation, `bench/grpc_origin`, built here with Go
into a temporary folder): one unary method, `/bench.Echo/Call`, answering its request's
message with a trailing metadata field (`grpc-status` and `x-bench` in the trailers). h2load
sends each call as a gRPC client does (POST, `content-type: application/grpc`,
`te: trailers`, a length-prefixed message of `--size` bytes), `--conns` connections of
`--streams` concurrent streams each, through each proxy (`bind ... proto h2`,
`server ... proto h2`; nginx with `grpc_pass`). Before measuring, one call per proxy goes
through a real gRPC client (Python's grpcio, when installed) and must come back with status
OK, the echoed message and the trailer: h2load alone counts any HTTP 200, and a gRPC error is
an HTTP 200 too.

As in `bench/h2.py` (whose process helpers this uses): each proxy alone with one thread on
CPU 0, h2load and the server on CPU 1, rounds interleaved, the figure the proxy's CPU time
(user + system, from /proc) per call; `--bin-b` adds a second Fulcrum binary for a paired A/B.
Every process it starts is stopped by PID; ports 127.0.0.1:24400..24401.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import re

from h2 import (BE, FE, PROCS, PROXY_CFG, ROOT, cpu_ticks, nginx_conf, report, rss_kb, start,
                stop, wait_listen)

PATH = "/bench.Echo/Call"


def build_origin(tmp):
    out = os.path.join(tmp, "grpc_origin")
    src = os.path.join(ROOT, "bench", "grpc_origin")
    subprocess.run(["go", "build", "-o", out, "."], cwd=src, check=True, timeout=600)
    return out


def grpc_check(msg):
    """One call through the proxy with a real gRPC client: None if it went right, else why;
    'skipped' without grpcio."""
    try:
        import grpc
    except ImportError:
        return "skipped (grpcio not installed)"
    with grpc.insecure_channel(f"127.0.0.1:{FE}") as ch:
        call = ch.unary_unary(PATH, request_serializer=None, response_deserializer=None)
        try:
            resp, info = call.with_call(msg, timeout=5)
        except grpc.RpcError as e:
            return f"{e.code()}: {e.details()}"
        trailers = dict(info.trailing_metadata() or ())
        if resp != msg or trailers.get("x-bench") != "1":
            return f"wrong answer {resp[:20]!r} trailers {trailers}"
    return None


def h2load(n, a, body):
    cmd = ["taskset", "-c", "1", "h2load", "-n", str(n), "-c", str(a.conns), "-m",
           str(a.streams), "-d", body, "-H", "content-type: application/grpc",
           "-H", "te: trailers", f"http://127.0.0.1:{FE}{PATH}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    ok = re.search(r"requests: .* (\d+) succeeded, (\d+) failed", out)
    codes = re.search(r"status codes: (\d+) 2xx", out)
    rps = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    if not ok or not rps or not codes:
        raise RuntimeError("h2load: " + out[-500:])
    return int(codes.group(1)), int(ok.group(1)) - int(codes.group(1)) + int(ok.group(2)), \
        float(rps.group(1))


def point(name, cmd, a, body, msg, log):
    p = start(cmd, "0", log)
    try:
        wait_listen(FE)
        why = grpc_check(msg)
        if why and not why.startswith("skipped"):
            raise RuntimeError(f"{name}: a gRPC call through it failed: {why}")
        h2load(2000, a, body)  # warm-up: connections to the server, caches
        u0, s0 = cpu_ticks(p.pid)
        done, failed, rps = h2load(a.requests, a, body)
        u1, s1 = cpu_ticks(p.pid)
        rss = rss_kb(p.pid)
    finally:
        stop(p)
    if failed:
        raise RuntimeError(f"{name}: {failed} calls failed")
    per = 1e6 / os.sysconf("SC_CLK_TCK") / done
    return (u1 - u0 + s1 - s0) * per, rps, rss, (s1 - s0) * per, why


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--conns", type=int, default=10)
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--size", type=int, default=64, help="the message's bytes")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--bin-b", help="a second Fulcrum binary (paired A/B)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-grpc-bench-")
    log = open(os.path.join(tmp, "log.txt"), "w")
    msg = bytes((i * 7) % 251 for i in range(a.size))
    body = os.path.join(tmp, "call.bin")
    open(body, "wb").write(b"\0" + len(msg).to_bytes(4, "big") + msg)
    cfg = os.path.join(tmp, "proxy.cfg")
    open(cfg, "w").write(PROXY_CFG.rstrip("\n") + " proto h2\n")
    ncfg = os.path.join(tmp, "nginx.conf")
    open(ncfg, "w").write(nginx_conf(tmp, True))
    contenders = [
        ("fulcrum", [a.bin, "-f", cfg]),
        ("haproxy", ["haproxy", "-db", "-f", cfg]),
        ("nginx", ["nginx", "-c", ncfg, "-e", os.path.join(tmp, "error.log")]),
    ]
    if a.bin_b:
        contenders.insert(1, ("fulcrum-b", [a.bin_b, "-f", cfg]))
    origin = build_origin(tmp)
    be = start([origin, "-listen", f"127.0.0.1:{BE}"], "1", log)
    results = {n: [] for n, _ in contenders}
    try:
        wait_listen(BE)
        for r in range(1, a.rounds + 1):
            for name, cmd in contenders:
                us, rps, rss, sys_us, why = point(name, cmd, a, body, msg, log)
                results[name].append((us, rps, rss, sys_us))
                print(f"round {r} {name:9}: {us:6.2f} us CPU/call ({sys_us:5.2f} system) "
                      f"{rps:9.0f} calls/s RSS {rss / 1024:6.1f} MB"
                      + (f"  [gRPC check {why}]" if why else ""), flush=True)
    finally:
        stop(be)
        for p in list(PROCS):
            stop(p)
    print(f"\nh2load -c{a.conns} -m{a.streams}, {a.requests} gRPC unary calls of {a.size} bytes "
          f"to grpc-go, one proxy thread, medians of {a.rounds} rounds:")
    report(results, "call", "calls/s", bool(a.bin_b))

if __name__ == "__main__":
    sys.exit(main())
