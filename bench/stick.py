#!/usr/bin/env python3
"""bench/stick.py: what stick tables cost (issue 15), Fulcrum beside HAProxy 2.6.

  python3 bench/stick.py cpu [--rounds 5] [--secs 5]
      Keep-alive CPU per request (wrk -t1 -c50 on CPU 1, the proxy alone on CPU 0, one thread)
      without a table, and with the classic rate limit: `http-request track-sc0 src` and
      `http-request deny deny_status 429 if { sc_http_req_rate(0) gt <huge> }` on a table
      `type ip size 1m expire 30s store http_req_rate(10s)`. Rounds interleave the four points.
  python3 bench/stick.py memory [--entries 1000000]
      The proxy's resident memory before and after `set table` fills that table with N
      distinct IPv4 keys over one runtime API session (prompt mode), for both proxies.

Every process it starts is stopped by PID; ports are 127.0.0.1:24300..24310 and a UNIX socket
in a temporary directory. Needs haproxy, wrk and a built Fulcrum (--bin).
"""

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (process helpers and the keep-alive point)

FE_PORT, BE_PORT = checks.FE_PORT, checks.BE_PORT


def config(track, sock=None):
    lines = ["global", "    nbthread 1"]
    if sock:
        lines.append(f"    stats socket {sock} level admin")
    lines += [
        "defaults", "    mode http", "    timeout connect 1s", "    timeout client 5s",
        "    timeout server 5s",
        "frontend fe", f"    bind 127.0.0.1:{FE_PORT}", "    default_backend be",
    ]
    if track:
        lines += [
            "    stick-table type ip size 1m expire 30s store http_req_rate(10s)",
            "    http-request track-sc0 src",
            "    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 1000000000 }",
        ]
    lines += ["backend be", f"    server s1 127.0.0.1:{BE_PORT}"]
    return "\n".join(lines) + "\n"


def point(binary, cfg, secs, log):
    p = checks.start([binary, "-db", "-f", cfg], "0", log)
    checks.wait_listen(FE_PORT)
    checks.wrk(1)  # warm-up
    c0 = checks.cpu_ticks(p.pid)
    reqs = checks.wrk(secs)
    c1 = checks.cpu_ticks(p.pid)
    checks.stop(p)
    return (c1 - c0) / checks.HZ * 1e6 / reqs, reqs / secs


def cpu(a, tmp, log):
    cfgs = {}
    for track in (False, True):
        path = os.path.join(tmp, f"track-{track}.cfg")
        with open(path, "w") as f:
            f.write(config(track))
        cfgs[track] = path
    variants = [
        ("fulcrum, no table", a.bin, cfgs[False]),
        ("fulcrum, track+rate", a.bin, cfgs[True]),
        ("haproxy, no table", "haproxy", cfgs[False]),
        ("haproxy, track+rate", "haproxy", cfgs[True]),
    ]
    res = {label: [] for label, _, _ in variants}
    for rnd in range(a.rounds):
        for label, binary, cfg in variants:
            us, rps = point(binary, cfg, a.secs, log)
            res[label].append((us, rps))
            print(f"round {rnd + 1} {label:22}: {us:6.2f} us CPU/request  {rps:9.0f} req/s",
                  flush=True)
    print(f"\nkeep-alive, wrk -t1 -c50, one proxy thread, medians of {a.rounds} rounds:")
    med = {}
    for label, rows in res.items():
        med[label] = statistics.median(r[0] for r in rows)
        lo, hi = min(r[0] for r in rows), max(r[0] for r in rows)
        print(f"  {label:22} {med[label]:6.2f} us CPU/request (range {lo:.2f}-{hi:.2f}), "
              f"{statistics.median(r[1] for r in rows):9.0f} req/s")
    for name in ("fulcrum", "haproxy"):
        d = med[f"{name}, track+rate"] - med[f"{name}, no table"]
        print(f"  {name}: the rule costs {d:+.2f} us per request")
    print(f"  track+rate, Fulcrum/HAProxy CPU: "
          f"{med['fulcrum, track+rate'] / med['haproxy, track+rate']:.2f}x")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fill(sock, n):
    """`set table` N keys over one prompt-mode session (answers read as they come); returns
    the table's line of `show table` once every answer came back."""
    import threading

    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.settimeout(600)
    out = []

    def read():
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            out.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    s.sendall(b"prompt\n")
    batch = []
    for i in range(n):
        ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
        batch.append(f"set table fe key {ip} data.http_req_rate 1\n")
        if len(batch) == 1000 or i == n - 1:
            s.sendall("".join(batch).encode())
            batch = []
    s.sendall(b"show table\nquit\n")
    reader.join()
    s.close()
    text = b"".join(out).decode(errors="replace")
    lines = [l for l in text.splitlines() if "# table: fe" in l]
    return lines[-1].lstrip("> ") if lines else "?"


def memory(a, tmp, log):
    for name, binary in (("fulcrum", a.bin), ("haproxy", "haproxy")):
        sock = os.path.join(tmp, f"{name}.sock")
        cfg = os.path.join(tmp, f"mem-{name}.cfg")
        with open(cfg, "w") as f:
            f.write(config(True, sock))
        p = checks.start([binary, "-db", "-f", cfg], "0", log)
        checks.wait_listen(FE_PORT)
        while not os.path.exists(sock):
            time.sleep(0.05)
        before = rss_kb(p.pid)
        t0 = time.time()
        shown = fill(sock, a.entries)
        took = time.time() - t0
        after = rss_kb(p.pid)
        checks.stop(p)
        per = (after - before) * 1024 / max(a.entries, 1)
        print(f"{name:8}: RSS {before / 1024:7.1f} MB -> {after / 1024:7.1f} MB "
              f"(+{(after - before) / 1024:.1f} MB, {per:.0f} bytes per entry), "
              f"filled in {took:.1f} s; {shown}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["cpu", "memory"])
    ap.add_argument("--bin", default=os.path.join(checks.ROOT, "target/release/fulcrum"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=float, default=5)
    ap.add_argument("--entries", type=int, default=1_000_000)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-stick-")
    log = open(os.path.join(tmp, "log"), "ab")
    be = checks.start([a.bin, "testserver", "-L", f"127.0.0.1:{BE_PORT}", "-n", "s1", "-t", "1",
                       "-q"], "1", log)
    try:
        checks.wait_listen(BE_PORT)
        cpu(a, tmp, log) if a.mode == "cpu" else memory(a, tmp, log)
    finally:
        for p in list(checks.PROCS):
            checks.stop(p)
        del be


if __name__ == "__main__":
    main()
