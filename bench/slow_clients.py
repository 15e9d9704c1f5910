#!/usr/bin/env python3
"""bench/slow_clients.py: memory per slow client (issue 37 §7), a proxy beside HAProxy 2.6.

  python3 bench/slow_clients.py BIN PORT N     # e.g. target/release/fulcrum 24501 10000

Starts BIN (fulcrum or haproxy) on a config answering every request itself, sends 20 whole
requests (warm-up), reads its RSS, then opens N connections that each send the start of a
request head and nothing more (a slowloris client), waits 2 s and reads the RSS again:
(growth / N) is the memory one waiting connection costs. N is bounded by the descriptor
limit (`ulimit -n`) of this shell; the proxy is stopped by PID. Standard library only.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

bin_, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cfg_path = os.path.join(tempfile.mkdtemp(prefix="slow-clients-"), "proxy.cfg")
# `maxconn` just above N: HAProxy asks for 2 descriptors per connection (and refuses to start
# beyond the hard limit: 20,000 allows N = 9,800 at most); Fulcrum as many.
cfg = f"""global
    maxconn {n + 50}
defaults
    mode http
    timeout client 60s
    timeout server 60s
    timeout connect 5s
    timeout http-request 60s
frontend fe
    bind 127.0.0.1:{port}
    http-request return status 200
"""
open(cfg_path,"w").write(cfg)
p = subprocess.Popen([bin_, "-db", "-f", cfg_path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1)
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1])
# warm-up: a few full requests
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); s.recv(1000); s.close()
time.sleep(0.5)
before = rss(p.pid)
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ")
    socks.append(s)
time.sleep(2)
after = rss(p.pid)
print(f"{os.path.basename(bin_)}: {n} slow clients, RSS {before} -> {after} kB, {(after-before)*1024/n:.0f} B per client")
p.terminate(); p.wait()
