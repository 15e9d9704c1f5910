#!/usr/bin/env python3
"""bench/idle_conns.py: the client of scenario f (idle keep-alive connections). Owns opening N
connections to host:port, sending one HTTP/1.1 request on each, checking the answer is a complete
200 with an empty body, then holding every connection idle. Prints `READY ok=<n> failed=<n>` once
all are open, then waits until stdin is closed (or --hold seconds pass) and closes them all.

    python3 bench/idle_conns.py --port 24101 -n 10000 [--parallel 200] [--hold 120]
"""
import argparse
import asyncio
import os
import sys

REQ = b"GET /?s=0 HTTP/1.1\r\nHost: bench\r\nUser-Agent: fulcrum-bench-idle\r\n\r\n"


async def open_one(host, port, sem, conns):
    async with sem:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        except (OSError, asyncio.TimeoutError):
            return False
        try:
            w.write(REQ)
            head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 10)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            w.close()
            return False
        lines = head.split(b"\r\n")
        ok = lines[0].split(b" ")[1:2] == [b"200"] and any(
            l.lower().replace(b" ", b"") == b"content-length:0" for l in lines[1:])
        conns.append(w)
        return ok


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--parallel", type=int, default=200)
    ap.add_argument("--hold", type=float, default=120.0, help="upper bound on the idle time")
    a = ap.parse_args()
    sem = asyncio.Semaphore(a.parallel)
    conns = []
    results = await asyncio.gather(*(open_one(a.host, a.port, sem, conns) for _ in range(a.n)))
    ok = sum(results)
    print(f"READY ok={ok} failed={a.n - ok}", flush=True)
    loop = asyncio.get_running_loop()
    eof = loop.run_in_executor(None, sys.stdin.read)
    try:
        await asyncio.wait_for(eof, a.hold)
    except asyncio.TimeoutError:
        pass
    print("CLOSED", flush=True)
    os._exit(0)  # closes every socket at once; the stdin reader thread may still be blocked


if __name__ == "__main__":
    asyncio.run(main())
