#!/usr/bin/env python3
"""bench/compression.py: response compression (issue 38 §2), Fulcrum beside HAProxy 2.6.

  python3 bench/compression.py [--rounds 3] [--repeat 5] [--bin PATH] [--level 1]

A text corpus from this machine's own documentation and libraries (HTML, JavaScript and JSON
files of 20 kB or more under /usr/share and /usr/lib, at most 40, 20 and 20 of them, sorted by
path; a few MB, listed in the output) is served by nginx (static, no compression of its own).
Each proxy (one thread on CPU 0; nginx and the client on CPU 1) has `compression algo gzip`
for the corpus's types; the client (Python, one keep-alive connection) asks for every file
`--repeat` times with `Accept-Encoding: gzip`, checks that each answer decodes (Python's zlib)
to the file, and sums the bytes. Figures: the proxy's CPU time (user + system, from /proc) per
MiB of corpus, and the compressed size against the corpus; rounds interleaved, medians.
`tune.comp.maxlevel` is `--level` for both (Debian's HAProxy compresses with libslz, which has
one level; Fulcrum with zlib-rs at that level). Then Fulcrum alone with its own zstd and br
(`compression algo zstd` / `br`, same level), whose answers are checked against the files'
sizes only (Python has no decoder for them here; the test suite decodes them with curl).

Every process it starts is stopped by PID; ports 127.0.0.1:24440..24442. Needs nginx and
haproxy; builds nothing.
"""
import argparse
import http.client
import os
import shutil
import statistics
import sys
import tempfile
import zlib

# The process helpers of bench/h2.py (start pinned, stop by PID, wait for a port, CPU ticks).
from h2 import HZ, ROOT, cpu_ticks, start, stop, wait_listen

ORIGIN, FE = 24440, 24441
TYPES = "text/html application/javascript text/javascript application/json"


def corpus(dest):
    picks = []
    for ext, most in ((".html", 40), (".js", 20), (".json", 20)):
        found = []
        for top in ("/usr/share", "/usr/lib"):
            for d, _, files in os.walk(top):
                for f in files:
                    p = os.path.join(d, f)
                    if f.endswith(ext) and os.path.isfile(p) and not os.path.islink(p):
                        try:
                            if os.path.getsize(p) >= 20000:
                                found.append(p)
                        except OSError:
                            pass
        picks += sorted(found)[:most]
    names = []
    for i, p in enumerate(picks):
        name = f"{i:03d}{os.path.splitext(p)[1]}"
        shutil.copyfile(p, os.path.join(dest, name))
        os.chmod(os.path.join(dest, name), 0o644)
        names.append((name, p))
    return names


def cpu(pid):
    return sum(cpu_ticks(pid)) / HZ


def wait_port(port):
    """`wait_listen`, then one request answered (nginx and the proxies are ready)."""
    wait_listen(port)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/")
    c.getresponse().read()


def run_client(names, files, repeat, algo="gzip"):
    conn = http.client.HTTPConnection("127.0.0.1", FE, timeout=10)
    plain = compressed = 0
    for _ in range(repeat):
        for name in names:
            conn.request("GET", "/" + name, headers={"Accept-Encoding": algo})
            r = conn.getresponse()
            body = r.read()
            if r.getheader("Content-Encoding") != algo:
                sys.exit(f"{name}: not compressed ({r.status})")
            if algo == "gzip" and zlib.decompress(body, 31) != files[name]:
                sys.exit(f"{name}: the compressed answer does not decode to the file")
            plain += len(files[name])
            compressed += len(body)
    return plain, compressed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--level", type=int, default=1)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-comp-bench-")
    os.chmod(tmp, 0o755)  # nginx's workers read the corpus as another user
    www = os.path.join(tmp, "www")
    os.mkdir(www)
    listed = corpus(www)
    names = [n for n, _ in listed]
    files = {n: open(os.path.join(www, n), "rb").read() for n in names}
    total = sum(len(b) for b in files.values())
    print(f"corpus: {len(names)} files, {total / 1048576:.2f} MiB "
          f"({sum(n.endswith('.html') for n in names)} HTML, "
          f"{sum(n.endswith('.js') for n in names)} JS, {sum(n.endswith('.json') for n in names)} JSON)")
    for n, p in listed:
        print(f"  {n} {p}")
    nginx_conf = os.path.join(tmp, "nginx.conf")
    with open(nginx_conf, "w") as f:
        f.write(f"""daemon off; worker_processes 1; pid {tmp}/nginx.pid; error_log {tmp}/nginx.err;
events {{}}
http {{ include /etc/nginx/mime.types; access_log off; gzip off; keepalive_requests 1000000;
  server {{ listen 127.0.0.1:{ORIGIN}; root {www}; }} }}
""")
    cfg = os.path.join(tmp, "proxy.cfg")
    with open(cfg, "w") as f:
        f.write(f"""global
    nbthread 1
    tune.comp.maxlevel {a.level}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{FE}
    compression algo gzip
    compression type {TYPES}
    default_backend be
backend be
    server s 127.0.0.1:{ORIGIN}
""")
    log = open(os.path.join(tmp, "procs.log"), "w")
    procs = [start(["nginx", "-c", nginx_conf], "1", log)]
    wait_port(ORIGIN)
    own = {}
    for algo in ("zstd", "br"):
        own[algo] = os.path.join(tmp, f"proxy-{algo}.cfg")
        with open(cfg) as src, open(own[algo], "w") as dst:
            dst.write(src.read().replace("compression algo gzip", f"compression algo {algo}"))
    proxies = {"fulcrum": ([a.bin, "-f", cfg], "gzip"), "haproxy": (["haproxy", "-f", cfg], "gzip"),
               "fulcrum-zstd": ([a.bin, "-f", own["zstd"]], "zstd"),
               "fulcrum-br": ([a.bin, "-f", own["br"]], "br")}
    results = {k: [] for k in proxies}
    try:
        for rnd in range(1, a.rounds + 1):
            for name, (cmd, algo) in proxies.items():
                p = start(cmd, "0", log)
                try:
                    wait_port(FE)
                    run_client(names, files, 1, algo)  # warm-up
                    before = cpu(p.pid)
                    plain, comp = run_client(names, files, a.repeat, algo)
                    used = cpu(p.pid) - before
                finally:
                    stop(p)
                us_per_mib = used * 1e6 / (plain / 1048576)
                results[name].append((us_per_mib, comp / plain))
                print(f"round {rnd} {name:12}: {us_per_mib:9.0f} us CPU/MiB, "
                      f"compressed to {100 * comp / plain:.2f} %")
    finally:
        for p in procs:
            stop(p)
    med = {k: (statistics.median(x for x, _ in v), statistics.median(y for _, y in v))
           for k, v in results.items()}
    print(f"tune.comp.maxlevel {a.level}, {a.rounds} rounds of {a.repeat} passes, medians:")
    for k, (c, s) in med.items():
        print(f"  {k:12} {c:9.0f} us CPU/MiB, compressed to {100 * s:.2f} %")
    f, h = med["fulcrum"], med["haproxy"]
    print(f"  fulcrum/haproxy (gzip): CPU {f[0] / h[0]:.2f}x, size {f[1] / h[1]:.3f}x")


if __name__ == "__main__":
    main()
