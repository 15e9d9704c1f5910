#!/usr/bin/env python3
"""bench/h2.py: HTTP/2 clients through the proxy (issue 16), Fulcrum beside HAProxy 2.6 and nginx.

  python3 bench/h2.py [--rounds 3] [--requests 200000] [--conns 10] [--streams 100] [--bin PATH]
                      [--backend h1|h2] [--bin-b PATH]

h2load (prior knowledge, `--conns` connections, `--streams` concurrent streams each) asks for a
small answer (`/?s=64`) through each proxy to one server: Fulcrum's HTTP/1 test server
(`--backend h1`), or an HTTP/2 server (`--backend h2`: HAProxy answering 64 bytes itself on a
`proto h2` bind, reached with `server ... proto h2`, and by nginx with `grpc_pass`, its only
HTTP/2 upstream). Each proxy runs alone
with one thread on CPU 0; h2load and the test server share CPU 1. Rounds are interleaved; the
figure is the proxy's CPU time (user + system, from /proc; the system part shown too) per request, and the median of the
rounds is reported with its range, beside requests per second and the proxy's RSS.

`--bin-b` adds a second Fulcrum binary, interleaved with the first in every round (a paired
A/B of a change), and prints its ratio to the first.

Every process it starts is stopped by PID; ports are 127.0.0.1:24400..24410. Needs haproxy,
nginx and h2load (Debian packages haproxy, nginx, nghttp2-client); builds nothing.
"""
import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HZ = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BE, FE = 24400, 24401
PROCS = []


def start(cmd, cpus, log):
    p = subprocess.Popen(["taskset", "-c", cpus] + cmd, stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    PROCS.append(p)
    return p


def stop(p):
    if p.poll() is None:
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
    if p in PROCS:
        PROCS.remove(p)


def wait_listen(port, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def tree_pids(pid):
    """The process and its children (nginx's workers)."""
    out = [pid]
    try:
        kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        kids = []
    for k in kids:
        out += tree_pids(int(k))
    return out


def cpu_ticks(pid):
    """(user, system) clock ticks of the process and its children."""
    user = system = 0
    for p in tree_pids(pid):
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            user += int(f[11])
            system += int(f[12])
        except OSError:
            pass
    return user, system


def rss_kb(pid):
    total = 0
    for p in tree_pids(pid):
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


ORIGIN_CFG = f"""global
  nbthread 1
defaults
  mode http
  timeout client 30s
frontend origin
  bind 127.0.0.1:{BE} proto h2
  http-request return status 200 content-type text/plain string "{'x' * 64}"
"""

PROXY_CFG = f"""global
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:{FE} proto h2
  default_backend be
backend be
  server s1 127.0.0.1:{BE}
"""


def nginx_conf(d, h2):
    return f"""daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    keepalive_requests 100000000;
    http2_max_concurrent_streams 100;
    upstream be {{
        server 127.0.0.1:{BE};
        keepalive 1000;
    }}
    server {{
        listen 127.0.0.1:{FE} http2;
        location / {{
            {"grpc_pass grpc://be;" if h2 else 'proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection "";'}
        }}
    }}
}}
"""


def h2load(n, conns, streams):
    cmd = ["taskset", "-c", "1", "h2load", "-n", str(n), "-c", str(conns), "-m", str(streams),
           f"http://127.0.0.1:{FE}/?s=64"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    ok = re.search(r"requests: .* (\d+) succeeded, (\d+) failed", out)
    rps = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    if not ok or not rps:
        raise RuntimeError("h2load: " + out[-500:])
    return int(ok.group(1)), int(ok.group(2)), float(rps.group(1))


def point(name, cmd, a, log):
    p = start(cmd, "0", log)
    try:
        wait_listen(FE)
        h2load(2000, a.conns, a.streams)  # warm-up: connections to the server, caches
        u0, s0 = cpu_ticks(p.pid)
        done, failed, rps = h2load(a.requests, a.conns, a.streams)
        u1, s1 = cpu_ticks(p.pid)
        rss = rss_kb(p.pid)
    finally:
        stop(p)
    if failed:
        raise RuntimeError(f"{name}: {failed} requests failed")
    per = 1e6 / HZ / done
    return (u1 - u0 + s1 - s0) * per, rps, rss, (s1 - s0) * per


def report(results, what, rate, with_b):
    """Prints each contender's medians (rows of (us, rate, rss_kb, sys_us) per round), the
    ratios to HAProxy and nginx, and with `with_b` the paired ratio of fulcrum-b to fulcrum."""
    med = {}
    for name, rows in results.items():
        us = [x[0] for x in rows]
        med[name] = statistics.median(us)
        print(f"  {name:9} {med[name]:6.2f} us CPU/{what} (range {min(us):.2f}-{max(us):.2f}; "
              f"system {statistics.median(x[3] for x in rows):.2f}), "
              f"{statistics.median(x[1] for x in rows):10.0f} {rate}, "
              f"RSS {statistics.median(x[2] for x in rows) / 1024:.1f} MB")
    paired = [f[0] / h[0] for f, h in zip(results["fulcrum"], results["haproxy"])]
    print(f"  fulcrum/haproxy CPU: {med['fulcrum'] / med['haproxy']:.2f}x (median of the rounds' "
          f"ratios {statistics.median(paired):.2f}x, range {min(paired):.2f}-{max(paired):.2f}), "
          f"fulcrum/nginx CPU: {med['fulcrum'] / med['nginx']:.2f}x")
    if with_b:
        pairs = [b[0] / x[0] for x, b in zip(results["fulcrum"], results["fulcrum-b"])]
        print(f"  fulcrum-b/fulcrum CPU: {med['fulcrum-b'] / med['fulcrum']:.3f}x "
              f"(per round: {', '.join(f'{p:.3f}' for p in pairs)}), "
              f"fulcrum-b/haproxy CPU: {med['fulcrum-b'] / med['haproxy']:.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--conns", type=int, default=10)
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--backend", choices=["h1", "h2"], default="h1")
    ap.add_argument("--bin-b", help="a second Fulcrum binary (paired A/B)")
    a = ap.parse_args()
    h2 = a.backend == "h2"
    tmp = tempfile.mkdtemp(prefix="fulcrum-h2-bench-")
    log = open(os.path.join(tmp, "log.txt"), "w")
    cfg = os.path.join(tmp, "proxy.cfg")
    open(cfg, "w").write(PROXY_CFG.rstrip("\n") + (" proto h2\n" if h2 else "\n"))
    ncfg = os.path.join(tmp, "nginx.conf")
    open(ncfg, "w").write(nginx_conf(tmp, h2))
    contenders = [
        ("fulcrum", [a.bin, "-f", cfg]),
        ("haproxy", ["haproxy", "-db", "-f", cfg]),
        ("nginx", ["nginx", "-c", ncfg, "-e", os.path.join(tmp, "error.log")]),
    ]
    if a.bin_b:
        contenders.insert(1, ("fulcrum-b", [a.bin_b, "-f", cfg]))
    if h2:
        ocfg = os.path.join(tmp, "origin.cfg")
        open(ocfg, "w").write(ORIGIN_CFG)
        be = start(["haproxy", "-db", "-f", ocfg], "1", log)
    else:
        be = start([a.bin, "testserver", "-q", "-L", f"127.0.0.1:{BE}"], "1", log)
    results = {n: [] for n, _ in contenders}
    try:
        wait_listen(BE)
        for r in range(1, a.rounds + 1):
            for name, cmd in contenders:
                us, rps, rss, sys_us = point(name, cmd, a, log)
                results[name].append((us, rps, rss, sys_us))
                print(f"round {r} {name:8}: {us:6.2f} us CPU/request ({sys_us:5.2f} system) "
                      f"{rps:10.0f} req/s RSS {rss / 1024:6.1f} MB", flush=True)
    finally:
        stop(be)
        for p in list(PROCS):
            stop(p)
    server = "HTTP/2 server" if h2 else "HTTP/1 server"
    print(f"\nh2load -c{a.conns} -m{a.streams}, {a.requests} requests of 64 bytes, {server}, "
          f"one proxy thread, medians of {a.rounds} rounds:")
    report(results, "request", "req/s", bool(a.bin_b))

if __name__ == "__main__":
    sys.exit(main())
