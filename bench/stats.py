#!/usr/bin/env python3
"""bench/stats.py: what the statistics cost (issue 13), Fulcrum beside HAProxy 2.6.

  python3 bench/stats.py render [--backends 100] [--servers 10] [--fetches 40] [--rounds 3]
      100 backends x 10 servers; the HTML page, ;csv, /metrics and `show stat` over the
      runtime API fetched one after another: CPU milliseconds of the proxy per rendering
      (its utime+stime, read from /proc), each proxy alone on one thread.
  python3 bench/stats.py latency [--secs 5] [--rounds 3]
      Keep-alive latency through the proxy (wrk -c20 -t1, one server) alone, then while a
      client fetches the HTML page and /metrics in a loop: p50/p99/max and requests/s.

Every process it starts is stopped by PID; ports are 127.0.0.1:24400..24403 and a UNIX socket
in a temporary directory. Needs haproxy, wrk and socat (Debian packages); pass --bin (default
target/release/fulcrum).
"""
import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BE_PORT, FE_PORT, ST_PORT = 24400, 24401, 24402
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


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def config(backends, servers, sock):
    lines = ["global", "    nbthread 1", f"    stats socket {sock} level admin",
             "defaults", "    mode http", "    timeout connect 1s", "    timeout client 5s",
             "    timeout server 5s",
             "frontend fe", f"    bind 127.0.0.1:{FE_PORT}", "    default_backend b0",
             "listen stats", f"    bind 127.0.0.1:{ST_PORT}", "    stats enable",
             "    stats uri /stats", "    stats admin if TRUE",
             "    http-request use-service prometheus-exporter if { path /metrics }"]
    for b in range(backends):
        lines.append(f"backend b{b}")
        for s in range(servers):
            lines.append(f"    server s{s} 127.0.0.1:{BE_PORT}")
    return "\n".join(lines) + "\n"


def http_get(port, path):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    n = 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        n += len(b)
    s.close()
    return n


def api(sock, cmd):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall((cmd + "\n").encode())
    n = 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        n += len(b)
    s.close()
    return n


def proxy_cmd(name, binary, cfg):
    return [binary if name == "fulcrum" else "haproxy", "-db", "-f", cfg]


def render(a, tmp, log):
    sock = os.path.join(tmp, "api.sock")
    cfg = os.path.join(tmp, "stats.cfg")
    with open(cfg, "w") as f:
        f.write(config(a.backends, a.servers, sock))
    what = [("HTML page", lambda: http_get(ST_PORT, "/stats")),
            ("CSV", lambda: http_get(ST_PORT, "/stats;csv")),
            ("Prometheus", lambda: http_get(ST_PORT, "/metrics")),
            ("show stat", lambda: api(sock, "show stat"))]
    res = {}
    for rnd in range(a.rounds):
        for name in ("fulcrum", "haproxy"):
            p = start(proxy_cmd(name, a.bin, cfg), "0", log)
            wait_listen(ST_PORT)
            time.sleep(0.5)
            for label, fetch in what:
                size = fetch()
                c0 = cpu_ticks(p.pid)
                for _ in range(a.fetches):
                    fetch()
                c1 = cpu_ticks(p.pid)
                ms = (c1 - c0) / HZ * 1000 / a.fetches
                res.setdefault((label, name), []).append((ms, size))
                print(f"round {rnd + 1} {name:8} {label:11}: {ms:6.2f} ms CPU per rendering, "
                      f"{size / 1024:7.0f} kB", flush=True)
            stop(p)
    print()
    print(f"{a.backends} backends x {a.servers} servers, medians of {a.rounds} rounds "
          f"({a.fetches} fetches each):")
    for label, _ in what:
        f = statistics.median(r[0] for r in res[(label, "fulcrum")])
        h = statistics.median(r[0] for r in res[(label, "haproxy")])
        fs = res[(label, "fulcrum")][0][1] / 1024
        hs = res[(label, "haproxy")][0][1] / 1024
        print(f"  {label:11}: Fulcrum {f:6.2f} ms ({fs:5.0f} kB)   HAProxy {h:6.2f} ms ({hs:5.0f} kB)")


def wrk(secs):
    run = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c20", f"-d{int(secs)}s", "--latency",
                          f"http://127.0.0.1:{FE_PORT}/"], capture_output=True, text=True)
    out = run.stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not m:
        raise RuntimeError(f"wrk: {out} {run.stderr}")
    rps = float(m.group(1))

    def lat(tag):
        m = re.search(rf"\s{tag}\s+([\d.]+)(us|ms|s)", out)
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v

    mx = re.search(r"Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", out)
    mxv = float(mx.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[mx.group(2)]
    return rps, lat("50%"), lat("99%"), mxv


def latency(a, tmp, log):
    sock = os.path.join(tmp, "api.sock")
    cfg = os.path.join(tmp, "stats.cfg")
    with open(cfg, "w") as f:
        f.write(config(a.backends, a.servers, sock))
    rows = []
    for rnd in range(a.rounds):
        p = start(proxy_cmd("fulcrum", a.bin, cfg), "0", log)
        wait_listen(FE_PORT)
        time.sleep(0.5)
        alone = wrk(a.secs)
        done = threading.Event()
        fetched = [0]

        def loop():
            while not done.is_set():
                http_get(ST_PORT, "/stats")
                http_get(ST_PORT, "/metrics")
                fetched[0] += 2

        t = threading.Thread(target=loop)
        t.start()
        busy = wrk(a.secs)
        done.set()
        t.join()
        stop(p)
        rows.append((alone, busy, fetched[0] / a.secs))
        for label, r in (("alone", alone), ("page loop", busy)):
            print(f"round {rnd + 1} {label:9}: {r[0]:9.0f} req/s  p50 {r[1]:6.3f} ms  "
                  f"p99 {r[2]:6.3f} ms  max {r[3]:7.3f} ms", flush=True)
        print(f"          ({fetched[0] / a.secs:.0f} pages and metrics fetched per second)")
    print()
    for i, label in ((0, "alone"), (1, "page loop")):
        m = lambda k: statistics.median(r[i][k] for r in rows)
        print(f"  {label:9}: {m(0):9.0f} req/s  p50 {m(1):6.3f} ms  p99 {m(2):6.3f} ms  "
              f"max {m(3):7.3f} ms (medians of {a.rounds})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["render", "latency"])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--backends", type=int, default=100)
    ap.add_argument("--servers", type=int, default=10)
    ap.add_argument("--fetches", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=float, default=5)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-stats-bench-")
    be = subprocess.Popen(["taskset", "-c", "1", a.bin, "testserver", "-L",
                           f"127.0.0.1:{BE_PORT}", "-q"], stdout=subprocess.DEVNULL,
                          start_new_session=True)
    PROCS.append(be)
    try:
        wait_listen(BE_PORT)
        with open(os.path.join(tmp, "proxy.log"), "w") as log:
            (render if a.mode == "render" else latency)(a, tmp, log)
    finally:
        for p in list(PROCS):
            stop(p)


if __name__ == "__main__":
    main()
