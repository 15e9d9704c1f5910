#!/usr/bin/env python3
"""bench/cache.py: CPU per cache hit (issue 38 §3), Fulcrum beside HAProxy 2.6.

  python3 bench/cache.py [--rounds 5] [--requests 200000] [--size 1024] [--bin PATH]
                         [--bin-b PATH]

Each proxy has one `cache` (`total-max-size 64`) used by a `listen` (`http-request cache-use`,
`http-response cache-store`) in front of Fulcrum's HTTP/1 test server. The client, h2load
over HTTP/1.1 (`--h1`, 10 keep-alive connections, one request at a time each), asks for 64
URLs answered with `--size` bytes and `Cache-Control: max-age=600`; a first pass (one
connection) stores them,
then every measured request is a hit (checked: the frontend's `cache_lookups` and `cache_hits`
on the stats socket each grow by the requests made). Each proxy runs with 1 thread on CPU 0, then 2 threads on CPUs 0-1 (the client shares
CPU 1, the test server too, and sees none of the measured requests). Rounds are interleaved;
the figure is the proxy's CPU time (user + system, from /proc) per request, median of the
rounds, with the ratio Fulcrum/HAProxy (the median of each round's ratio).

`--bin-b` adds a second Fulcrum binary (a paired A/B of a change).

Every process it starts is stopped by PID; ports 127.0.0.1:24450..24451. Needs haproxy and
h2load; builds nothing.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import socket

from h2 import HZ, ROOT, cpu_ticks, start, stop, wait_listen

ORIGIN, FE = 24450, 24451
URLS = 64


def config(threads, sock):
    return f"""global
    nbthread {threads}
    stats socket {sock} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
listen fe
    bind 127.0.0.1:{FE}
    http-request cache-use c
    http-response cache-store c
    server s 127.0.0.1:{ORIGIN}
cache c
    total-max-size 64
    max-object-size 100000
    max-age 600
"""


def lookups_and_hits(sock):
    """The frontend's `cache_lookups` and `cache_hits` (`show stat` on the stats socket)."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b"show stat\n")
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    s.close()
    lines = out.decode().splitlines()
    names = lines[0].lstrip("# ").split(",")
    for line in lines[1:]:
        row = dict(zip(names, line.split(",")))
        if row.get("svname") == "FRONTEND":
            return int(row["cache_lookups"]), int(row["cache_hits"])
    raise RuntimeError("no FRONTEND line in show stat")


def h2load(uris, n, conns=10):
    cmd = ["taskset", "-c", "1", "h2load", "--h1", "-n", str(n), "-c", str(conns), "-m", "1"]
    cmd += uris
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    ok = re.search(r"requests: .* (\d+) succeeded, (\d+) failed", out)
    codes = re.search(r"status codes: (\d+) 2xx", out)
    if not ok or not codes:
        raise RuntimeError("h2load: " + out[-500:])
    return int(ok.group(1)), int(ok.group(2)), int(codes.group(1))


def point(cmd, cpus, uris, n, sock, log):
    p = start(cmd, cpus, log)
    try:
        wait_listen(FE)
        h2load(uris, len(uris), 1)  # one client over every URL: each is stored
        h2load(uris, 10 * len(uris))  # warm
        l0, h0 = lookups_and_hits(sock)
        t0 = cpu_ticks(p.pid)
        done, failed, ok = h2load(uris, n)
        t1 = cpu_ticks(p.pid)
        l1, h1 = lookups_and_hits(sock)
    finally:
        stop(p)
    if failed or ok != done:
        raise RuntimeError(f"{cmd[0]}: {failed} failed, {done - ok} not 2xx")
    if l1 - l0 != done or h1 - h0 != done:
        raise RuntimeError(f"{cmd[0]}: {l1 - l0} lookups, {h1 - h0} hits for {done} requests")
    return (t1[0] - t0[0] + t1[1] - t0[1]) * 1e6 / HZ / done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--bin-b")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-cache-bench-")
    log = open(os.path.join(tmp, "procs.log"), "w")
    uris = [f"http://127.0.0.1:{FE}/o{i}?s={a.size}&hdr=Cache-Control:max-age%3D600"
            for i in range(URLS)]
    origin = start([a.bin, "testserver", "-q", "-L", f"127.0.0.1:{ORIGIN}"], "1", log)
    wait_listen(ORIGIN)
    bins = {"fulcrum": a.bin, "haproxy": "haproxy"}
    if a.bin_b:
        bins["fulcrum-b"] = a.bin_b
    results = {}
    try:
        for threads, cpus in ((1, "0"), (2, "0,1")):
            cfg = os.path.join(tmp, f"proxy{threads}.cfg")
            sock = os.path.join(tmp, "stats.sock")
            open(cfg, "w").write(config(threads, sock))
            for rnd in range(1, a.rounds + 1):
                for name, b in bins.items():
                    us = point([b, "-f", cfg], cpus, uris, a.requests, sock, log)
                    results.setdefault((threads, name), []).append(us)
                    print(f"{threads} thread(s) round {rnd} {name:9}: {us:6.2f} us CPU/hit")
    finally:
        stop(origin)
    print(f"h2load --h1 -c10, {a.requests} hits of {a.size} bytes, medians of {a.rounds} rounds:")
    for threads in (1, 2):
        f, h = results[(threads, "fulcrum")], results[(threads, "haproxy")]
        ratios = [x / y for x, y in zip(f, h)]
        line = (f"  {threads} thread(s): fulcrum {statistics.median(f):.2f} us, haproxy "
                f"{statistics.median(h):.2f} us CPU/hit; fulcrum/haproxy {statistics.median(ratios):.2f}x "
                f"(range {min(ratios):.2f}-{max(ratios):.2f})")
        if a.bin_b:
            fb = results[(threads, "fulcrum-b")]
            line += f"; b/a {statistics.median(x / y for x, y in zip(fb, f)):.3f}x"
        print(line)


if __name__ == "__main__":
    main()
