#!/usr/bin/env python3
"""bench/pool_burst.py: how many server connections a burst of client connections leaves open
(issue 15 §2), Fulcrum beside HAProxy 2.6.

  python3 bench/pool_burst.py [--clients 3000] [--concurrent 1000] [--rounds 2] [--bin PATH]
                              [--maxconn 8000] [--later 1 [7 ...]]

Each client connection sends one request (HTTP/1.1 keep-alive, HTTP/1.1 with `Connection:
close`, or HTTP/1.0), reads the answer's head and closes: with `http-reuse safe` every first
request goes to a new server connection, so what matters is how many the proxy keeps idle
afterwards. Established proxy->server connections are sampled with `ss` every 20 ms: the peak
during the burst, right after it, and `--later` seconds after it (1 s by default; issue 37 §7
asks about 2 s and 7 s under `--maxconn 2000`); plus the connections opened (the
kernel's TCP ActiveOpens, which the clients' own connects add to: compare rows, not absolutes).
Both proxies run with two threads on CPUs 0-1, the test server and the client beside them.
Every process started is stopped by PID; ports are 127.0.0.1:24320..24321.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from checks import ROOT, PROCS, active_opens, start, stop, wait_listen  # noqa: E402

BE_PORT, FE_PORT = 24320, 24321
REQS = {
    "keep-alive": b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n",
    "close": b"GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n",
    "http/1.0": b"GET / HTTP/1.0\r\n\r\n",
}
CFG = f"""global
    nbthread 2
    maxconn {{maxconn}}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{FE_PORT}
    default_backend be
backend be
    server s1 127.0.0.1:{BE_PORT}
"""


def established():
    out = subprocess.run(["ss", "-tnH", "state", "established", f"( dport = :{BE_PORT} )"],
                         capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.strip())


async def burst(req, clients, concurrent):
    sem = asyncio.Semaphore(concurrent)

    async def one():
        async with sem:
            try:
                r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", FE_PORT), 10)
                w.write(req)
                await w.drain()
                head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 10)
                w.close()
                return head.split(b" ")[1:2] == [b"200"]
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                return False

    return sum(await asyncio.gather(*[one() for _ in range(clients)]))


def measure(req, clients, concurrent, later):
    peak, stop_flag = [0], [False]

    def sampler():
        while not stop_flag[0]:
            peak[0] = max(peak[0], established())
            time.sleep(0.02)

    t = threading.Thread(target=sampler)
    opens = active_opens()
    t.start()
    ok = asyncio.run(burst(req, clients, concurrent))
    right_after = established()
    t0, samples = time.monotonic(), []
    for at in later:
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        samples.append(established())
    stop_flag[0] = True
    t.join()
    return (ok, peak[0], right_after, *samples, active_opens() - opens)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--clients", type=int, default=3000)
    ap.add_argument("--concurrent", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--maxconn", type=int, default=8000)
    ap.add_argument("--later", type=float, nargs="+", default=[1.0])
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pool-burst-")
    cfg = os.path.join(tmp, "proxy.cfg")
    with open(cfg, "w") as f:
        f.write(CFG.replace("{maxconn}", str(a.maxconn)))
    log = open(os.path.join(tmp, "run.log"), "w")
    rows = []
    try:
        srv = start([a.bin, "testserver", "-q", "-L", f"127.0.0.1:{BE_PORT}"], "0-1", log)
        wait_listen(BE_PORT)
        for _ in range(a.rounds):
            for name in ["fulcrum", "haproxy"]:
                binary = a.bin if name == "fulcrum" else "haproxy"
                px = start([binary, "-db", "-f", cfg], "0-1", log)
                wait_listen(FE_PORT)
                for shape, req in REQS.items():
                    r = measure(req, a.clients, a.concurrent, a.later)
                    rows.append((name, shape) + r)
                    later = " ".join(f"after_{t:g}s={n}" for t, n in zip(a.later, r[3:-1]))
                    print(f"{name:8} {shape:10} ok={r[0]} peak={r[1]} right_after={r[2]} "
                          f"{later} opened={r[-1]}", flush=True)
                    # Let the pool settle between shapes (idle connections age out).
                    time.sleep(0.5)
                stop(px)
        stop(srv)
    finally:
        for p in list(PROCS):
            stop(p)
    print(f"\n{a.clients} clients, {a.concurrent} at a time, one request each "
          f"(median of {a.rounds} rounds):\n")
    later = " | ".join(f"after {t:g} s" for t in a.later)
    print(f"| proxy | request | peak server conns | right after | {later} |")
    print("|---|---|---|---|" + "---|" * len(a.later))
    for name in ["fulcrum", "haproxy"]:
        for shape in REQS:
            got = sorted(r[3:-1] for r in rows if r[0] == name and r[1] == shape)
            med = got[len(got) // 2]
            print(f"| {name} | {shape} | " + " | ".join(str(v) for v in med) + " |")


if __name__ == "__main__":
    main()
