#!/usr/bin/env python3
"""bench/tls.py: what TLS costs (issue 14), Fulcrum beside HAProxy 2.6 and nginx (OpenSSL 3).

  python3 bench/tls.py [--rounds 3] [--secs 8] [--only handshake,keepalive,bulk]

Each server runs alone, one thread pinned to CPU 0; the client on CPU 1. CPU is the server's
user+system time from /proc (every process of it), divided by the work done.
  handshake  full handshakes, `openssl s_time -new` (one at a time, no request): ECDSA P-256 and
             RSA-2048 certificates, TLS 1.3 and 1.2; then resumed ones (`-reuse`).
  keepalive  HTTPS keep-alive requests, `wrk -c50` through the proxy to a local test server.
  bulk       1 MiB responses over HTTPS, `wrk -c4`: throughput and CPU per MiB.
Rounds are interleaved (F, H, N, F, H, N...); medians are printed as a Markdown table.

Every process it starts is stopped by PID; ports 127.0.0.1:24320..24322. Needs haproxy, nginx,
wrk and openssl (Debian packages); builds nothing: pass --bin (default target/release/fulcrum).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import HZ, ROOT, start, stop, wait_listen  # noqa: E402

BE_PORT, FE_PORT = 24320, 24321


def ticks_of(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total


def family(pid):
    """The process and its children (nginx's workers)."""
    out = [pid]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid == pid:
                    out.append(int(d))
            except OSError:
                pass
    return out


def certs(tmp):
    paths = {}
    for kind, args in [("ecdsa", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]),
                       ("rsa", ["-newkey", "rsa:2048"])]:
        key, crt = f"{tmp}/{kind}.key", f"{tmp}/{kind}.crt"
        subprocess.run(["openssl", "req", "-x509", "-nodes", "-days", "30", "-subj", "/CN=bench.test",
                        "-keyout", key, "-out", crt] + args, check=True, capture_output=True)
        pem = f"{tmp}/{kind}.pem"
        with open(pem, "w") as out:
            out.write(open(crt).read() + open(key).read())
        paths[kind] = (pem, crt, key)
    return paths


def configs(tmp, cert):
    pem, crt, key = cert
    fulcrum = f"""global
    nbthread 1
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{FE_PORT} ssl crt {pem}
    default_backend be
backend be
    server s1 127.0.0.1:{BE_PORT}
"""
    haproxy = fulcrum.replace("nbthread 1", "nbthread 1\n    tune.ssl.default-dh-param 2048")
    nginx = f"""worker_processes 1;
daemon off;
master_process on;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    upstream be {{ server 127.0.0.1:{BE_PORT}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{FE_PORT} ssl;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        keepalive_requests 1000000;
        location / {{ proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection ""; }}
    }}
}}
"""
    out = {}
    for name, text in [("fulcrum", fulcrum), ("haproxy", haproxy), ("nginx", nginx)]:
        path = f"{tmp}/{name}.cfg"
        with open(path, "w") as f:
            f.write(text)
        out[name] = path
    return out


def server(name, binary, cfg, log):
    if name == "nginx":
        return start(["nginx", "-c", cfg, "-p", os.path.dirname(cfg)], "0", log)
    return start([binary if name == "fulcrum" else "haproxy", "-db", "-f", cfg], "0", log)


def s_time(secs, version, reuse):
    args = ["taskset", "-c", "1", "openssl", "s_time", "-connect", f"127.0.0.1:{FE_PORT}",
            "-time", str(int(secs)), version, "-reuse" if reuse else "-new"]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    m = re.search(r"(\d+) connections in", out)
    if not m:
        raise RuntimeError(out)
    return int(m.group(1))


def wrk(secs, conns, path):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{int(secs)}s",
                          f"https://127.0.0.1:{FE_PORT}{path}"], capture_output=True, text=True).stdout
    reqs = None
    for line in out.splitlines():
        if "requests in" in line:
            reqs = int(line.split()[0])
    if reqs is None:
        raise RuntimeError(out)
    return reqs


def measure(name, binary, cfg, log, work):
    p = server(name, binary, cfg, log)
    wait_listen(FE_PORT)
    time.sleep(0.3)
    pids = family(p.pid)
    work(1)  # warm-up
    c0 = ticks_of(pids)
    done = work(None)
    c1 = ticks_of(pids)
    stop(p)
    return (c1 - c0) / HZ * 1e6, done


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=float, default=8)
    ap.add_argument("--only", default="handshake,keepalive,bulk")
    a = ap.parse_args()
    only = a.only.split(",")
    tmp = tempfile.mkdtemp(prefix="fulcrum-tls-bench-")
    log = open(f"{tmp}/run.log", "w")
    ts = start([a.bin, "testserver", "-L", f"127.0.0.1:{BE_PORT}", "-q", "-t", "1"], "1", log)
    wait_listen(BE_PORT)
    cert = certs(tmp)
    names = ["fulcrum", "haproxy", "nginx"]
    rows = []
    try:
        points = []
        if "handshake" in only:
            for kind in ["ecdsa", "rsa"]:
                for v in ["-tls1_3", "-tls1_2"]:
                    points.append((f"full handshake {kind.upper()} {v[1:].replace('_', '.')}", kind,
                                   lambda secs, v=v: s_time(secs or a.secs, v, False), "µs CPU/handshake", 1))
            points.append(("resumed handshake ECDSA tls1.2", "ecdsa",
                           lambda secs: s_time(secs or a.secs, "-tls1_2", True), "µs CPU/handshake", 1))
        if "keepalive" in only:
            points.append(("HTTPS keep-alive, wrk -c50", "ecdsa",
                           lambda secs: wrk(secs or a.secs, 50, "/"), "µs CPU/request", 1))
        if "bulk" in only:
            points.append(("HTTPS 1 MiB responses, wrk -c4", "ecdsa",
                           lambda secs: wrk(secs or a.secs, 4, "/?s=1048576"), "ms CPU/MiB", 1000))
        for title, kind, work, unit, scale in points:
            cfgs = configs(tmp, cert[kind])
            res = {n: [] for n in names}
            rate = {n: [] for n in names}
            for r in range(a.rounds):
                for n in names:
                    cpu_us, done = measure(n, a.bin, cfgs[n], log, work)
                    per = cpu_us / max(done, 1) / scale
                    res[n].append(per)
                    rate[n].append(done / a.secs)
                    print(f"{title:40s} round {r + 1} {n:8s}: {per:8.2f} {unit}  {done / a.secs:10.0f}/s", flush=True)
            med = {n: statistics.median(res[n]) for n in names}
            best = min(med["haproxy"], med["nginx"])
            rows.append((title, unit, med, {n: statistics.median(rate[n]) for n in names}, med["fulcrum"] / best))
    finally:
        stop(ts)
    print()
    print("| point | unit | Fulcrum | HAProxy 2.6 | nginx 1.22 | Fulcrum / better of the two |")
    print("|---|---|---|---|---|---|")
    for title, unit, med, rate, ratio in rows:
        cells = " | ".join(f"{med[n]:.2f} ({rate[n]:.0f}/s)" for n in names)
        print(f"| {title} | {unit} | {cells} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
