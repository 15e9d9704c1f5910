#!/usr/bin/env python3
"""bench/h2_idle.py: memory per idle HTTP/2 client connection (issue 16 §3), Fulcrum beside
HAProxy 2.6. Each proxy runs alone (one thread) on a `bind ... proto h2` frontend; N connections
send HTTP/2's preface and an empty SETTINGS frame, read the proxy's SETTINGS, acknowledge them,
and stay idle; the figure is the proxy's RSS growth (from /proc) divided by N, after a first
batch of connections has warmed the allocator up. A second figure has each connection make one
request first (a GET answered by the proxy itself) and then stay idle: HPACK's tables then hold
the request's fields, as on a browser's connection between two pages.

    python3 bench/h2_idle.py [-n 1000] [--bin target/release/fulcrum]

Every process it starts is stopped by PID; port 127.0.0.1:24420. Needs haproxy for the
comparison (skipped without it).
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = 24420
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS_ACK = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"

CFG = f"""global
  nbthread 1
defaults
  mode http
  timeout client 300s
  timeout http-keep-alive 300s
frontend fe
  bind 127.0.0.1:{PORT} proto h2
  http-request return status 200
"""


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# GET / on stream 1, END_STREAM and END_HEADERS: :method GET, :scheme http, :path / from HPACK's
# static table, :authority and user-agent as literals with incremental indexing (they enter the
# proxy's dynamic table, as a browser's fields do).
AUTHORITY = b"127.0.0.1"
AGENT = b"h2-idle-bench/1.0"
BLOCK = (b"\x82\x86\x84\x41" + bytes([len(AUTHORITY)]) + AUTHORITY
         + b"\x7a" + bytes([len(AGENT)]) + AGENT)
REQUEST = len(BLOCK).to_bytes(3, "big") + b"\x01\x05" + (1).to_bytes(4, "big") + BLOCK


def read_frame(s, buf):
    """(type, flags, stream id, rest of buf) of the next frame."""
    while True:
        if len(buf) >= 9:
            n = int.from_bytes(buf[:3], "big")
            if len(buf) >= 9 + n:
                sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                return buf[3], buf[4], sid, buf[9 + n:]
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk


def open_idle(n, request=False):
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
        s.sendall(PREFACE + SETTINGS)
        buf = b""
        while True:
            kind, flags, _, buf = read_frame(s, buf)
            if kind == 4 and not flags & 1:
                break
        s.sendall(SETTINGS_ACK + (REQUEST if request else b""))
        while request:
            kind, flags, sid, buf = read_frame(s, buf)
            if sid == 1 and kind in (0, 1) and flags & 1:
                break
        conns.append(s)
    return conns


def measure(cmd, n, request):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        end = time.time() + 10
        while time.time() < end:
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        warm = open_idle(200, request)
        time.sleep(0.5)
        before = rss_kb(p.pid)
        conns = open_idle(n, request)
        # Idle a while: Fulcrum gives back a connection's stream memory after a second
        # without streams.
        time.sleep(3.0)
        after = rss_kb(p.pid)
        for s in conns + warm:
            s.close()
        return (after - before) * 1024 / n
    finally:
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-h2-idle-")
    cfg = os.path.join(tmp, "proxy.cfg")
    open(cfg, "w").write(CFG)
    for request in (False, True):
        what = "after one request each" if request else "preface, SETTINGS both ways"
        print(f"{a.n} idle HTTP/2 connections ({what}), RSS growth per connection:")
        print(f"  fulcrum  {measure([a.bin, '-f', cfg], a.n, request) / 1024:6.1f} kB")
        if shutil.which("haproxy"):
            print(f"  haproxy  {measure(['haproxy', '-db', '-f', cfg], a.n, request) / 1024:6.1f} kB")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
