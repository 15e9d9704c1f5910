#!/usr/bin/env python3
"""bench/fastcgi.py: PHP through FastCGI (issue 39 §1), Fulcrum beside HAProxy 2.6 and nginx.

  python3 bench/fastcgi.py [--rounds 3] [--requests 20000] [--conns 8] [--bin PATH]

Debian's PHP-FPM (16 static children, CPU 1) runs a script that prints one line. With
`keep-conn` an idle kept connection holds a PHP-FPM child, so fewer children than connections
stall HAProxy and Fulcrum alike (HAProxy 2.6 measured: 295 requests/s and failures with 4
children for 8 connections). Each proxy, alone with one thread on CPU 0, passes
`GET /hello.php` to it over TCP: Fulcrum and HAProxy with the same configuration (`fcgi-app`
with `docroot`, `use-fcgi-app`, `server ... proto fcgi`, HAProxy's default `option keep-conn`),
nginx with `fastcgi_pass` to an upstream with `keepalive 8` and `fastcgi_keep_conn on`. h2load
(HTTP/1.1, `--conns` keep-alive connections, CPU 1 beside PHP-FPM) sends `--requests` requests
after a warm-up. Figures: requests per second and the proxy's CPU time (user + system, from
/proc) per request; rounds interleaved, medians with their range.

Every process it starts is stopped by PID; ports 127.0.0.1:24450..24452. Needs php-fpm, haproxy,
nginx and h2load (Debian packages php-fpm, haproxy, nginx, nghttp2-client); builds nothing.
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

from h2 import HZ, ROOT, cpu_ticks, start, stop, wait_listen

FPM, FE = 24450, 24451


def h2load(n, conns):
    cmd = ["taskset", "-c", "1", "h2load", "--h1", "-n", str(n), "-c", str(conns),
           f"http://127.0.0.1:{FE}/hello.php"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    ok = re.search(r"requests: .* (\d+) succeeded, (\d+) failed", out)
    rps = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    codes = re.search(r"status codes: (\d+) 2xx", out)
    if not ok or not rps:
        raise RuntimeError("h2load: " + out[-500:])
    return int(ok.group(1)), int(ok.group(2)), float(rps.group(1)), int(codes.group(1)) if codes else 0


def configs(d, www):
    proxy = f"""global
    nbthread 1
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
fcgi-app php
    docroot {www}
frontend fe
    bind 127.0.0.1:{FE}
    default_backend php
backend php
    use-fcgi-app php
    server fpm 127.0.0.1:{FPM} proto fcgi
"""
    open(os.path.join(d, "proxy.cfg"), "w").write(proxy)
    nginx = f"""worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    upstream fpm {{ server 127.0.0.1:{FPM}; keepalive 8; }}
    server {{
        listen 127.0.0.1:{FE};
        root {www};
        location ~ \\.php$ {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_keep_conn on;
            fastcgi_pass fpm;
        }}
    }}
}}
"""
    open(os.path.join(d, "nginx.conf"), "w").write(nginx)
    fpm = f"""[global]
error_log = {d}/fpm-error.log
daemonize = no
[www]
listen = 127.0.0.1:{FPM}
pm = static
pm.max_children = 16
"""
    if os.geteuid() == 0:
        fpm += "user = nobody\ngroup = nogroup\n"
    open(os.path.join(d, "fpm.conf"), "w").write(fpm)


def point(name, cmd, a, log):
    p = start(cmd, "0", log)
    try:
        wait_listen(FE)
        h2load(1000, a.conns)  # warm-up: connections to PHP-FPM, PHP's opcode cache
        u0, s0 = cpu_ticks(p.pid)
        done, failed, rps, ok = h2load(a.requests, a.conns)
        u1, s1 = cpu_ticks(p.pid)
    finally:
        stop(p)
    if failed or ok != done:
        raise RuntimeError(f"{name}: {failed} failed, {done - ok} not 2xx")
    return (u1 - u0 + s1 - s0) * 1e6 / HZ / done, rps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    a = ap.parse_args()
    fpm_bin = sorted(glob.glob("/usr/sbin/php-fpm*"))
    if not fpm_bin:
        sys.exit("php-fpm is not installed (Debian package php-fpm)")
    d = tempfile.mkdtemp(prefix="fulcrum-bench-fcgi-")
    www = os.path.join(d, "www")
    os.makedirs(www)
    open(os.path.join(www, "hello.php"), "w").write("<?php\necho \"hello\\n\";\n")
    os.chmod(d, 0o755)
    configs(d, www)
    log = open(os.path.join(d, "bench.log"), "w")
    fpm_cmd = [fpm_bin[-1], "-F", "-n", "-y", os.path.join(d, "fpm.conf")]
    if os.geteuid() == 0:
        fpm_cmd.append("-R")
    fpm = start(fpm_cmd, "1", log)
    contenders = {
        "fulcrum": [a.bin, "-f", os.path.join(d, "proxy.cfg")],
        "haproxy": ["haproxy", "-db", "-f", os.path.join(d, "proxy.cfg")],
        "nginx": ["nginx", "-c", os.path.join(d, "nginx.conf")],
    }
    results = {k: [] for k in contenders}
    try:
        wait_listen(FPM)
        for r in range(a.rounds):
            for name, cmd in contenders.items():
                results[name].append(point(name, cmd, a, log))
                print(f"round {r + 1} {name}: {results[name][-1][0]:.1f} us/req, {results[name][-1][1]:.0f} req/s",
                      flush=True)
    finally:
        stop(fpm)
    print(f"\n{a.requests} requests, {a.conns} connections, {a.rounds} rounds (median [range])")
    print("| proxy | CPU us/request | requests/s | CPU vs HAProxy |")
    print("|---|---|---|---|")
    base = statistics.median(x[0] for x in results["haproxy"])
    for name, rows in results.items():
        us = [x[0] for x in rows]
        rps = [x[1] for x in rows]
        print(f"| {name} | {statistics.median(us):.1f} [{min(us):.1f}-{max(us):.1f}] | "
              f"{statistics.median(rps):.0f} [{min(rps):.0f}-{max(rps):.0f}] | {statistics.median(us) / base:.2f}x |")


if __name__ == "__main__":
    main()
