#!/usr/bin/env python3
"""bench/log_cost.py: what logging every request costs (issue 12), Fulcrum beside HAProxy 2.6.

  python3 bench/log_cost.py [--rounds 5] [--secs 5] [--bin PATH] [--bin-b PATH]

Keep-alive small requests (wrk -t1 -c50, one server, empty body), each proxy with one thread on
CPU 0, wrk, the test server and the syslog sink on CPU 1. Four variants, interleaved round by
round: Fulcrum and HAProxy without logging, and with `option httplog` sending every request's
line to the same local UDP syslog sink (socat reading 127.0.0.1:24312 into /dev/null). Reports
the proxy's CPU microseconds per request (user + system, from /proc), requests per second, and
the datagrams the sink's socket received (the kernel's UDP InDatagrams counter), which must be
about one per request. With --bin-b, a fifth and sixth variant run that binary too (a paired
A/B of a logging change).

Every process it starts is stopped by PID; ports are 127.0.0.1:24310..24312. Needs haproxy, wrk
and socat (Debian packages); builds nothing: --bin defaults to target/release/fulcrum.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import HZ, PROCS, ROOT, cpu_ticks, start, stop, wait_listen  # noqa: E402

BE_PORT, FE_PORT, SINK_PORT = 24310, 24311, 24312


def udp_in():
    """Datagrams that reached a local UDP socket, queued or dropped there for want of room."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return sum(int(rows[1][rows[0].index(k)]) for k in ("InDatagrams", "RcvbufErrors"))


def config(logging):
    lines = ["global", "    nbthread 1"]
    if logging:
        lines.append(f"    log 127.0.0.1:{SINK_PORT} local0")
    lines += ["defaults", "    mode http", "    timeout connect 1s", "    timeout client 5s",
              "    timeout server 5s"]
    if logging:
        lines += ["    log global", "    option httplog"]
    lines += ["frontend fe", f"    bind 127.0.0.1:{FE_PORT}", "    default_backend be",
              "backend be", f"    server s1 127.0.0.1:{BE_PORT}"]
    return "\n".join(lines) + "\n"


def wrk(secs):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c50", f"-d{int(secs)}s",
                          f"http://127.0.0.1:{FE_PORT}/"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "requests in" in line:
            return int(line.split()[0])
    raise RuntimeError(out)


def point(cmd, secs, log):
    p = start(cmd, "0", log)
    wait_listen(FE_PORT)
    wrk(1)  # warm-up
    c0, u0 = cpu_ticks(p.pid), udp_in()
    reqs = wrk(secs)
    c1, u1 = cpu_ticks(p.pid), udp_in()
    stop(p)
    return (c1 - c0) / HZ * 1e6 / reqs, reqs / secs, (u1 - u0) / reqs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--bin-b")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=float, default=5)
    ap.add_argument("--sink", choices=["socat", "drop"], default="socat",
                    help="socat reads every datagram (CPU 1); drop: a bound socket nobody reads "
                         "(the kernel still carries each datagram to it, then drops it)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-logbench-")
    log = open(os.path.join(tmp, "log"), "ab")
    cfgs = {}
    for name, on in (("plain", False), ("httplog", True)):
        cfgs[name] = os.path.join(tmp, f"{name}.cfg")
        with open(cfgs[name], "w") as f:
            f.write(config(on))
    variants = [
        ("fulcrum", [a.bin, "-db", "-f", cfgs["plain"]]),
        ("fulcrum httplog", [a.bin, "-db", "-f", cfgs["httplog"]]),
        ("haproxy", ["haproxy", "-db", "-f", cfgs["plain"]]),
        ("haproxy httplog", ["haproxy", "-db", "-f", cfgs["httplog"]]),
    ]
    if a.bin_b:
        variants += [("B fulcrum", [a.bin_b, "-db", "-f", cfgs["plain"]]),
                     ("B fulcrum httplog", [a.bin_b, "-db", "-f", cfgs["httplog"]])]
    start([a.bin, "testserver", "-L", f"127.0.0.1:{BE_PORT}", "-n", "s1", "-t", "1", "-q"], "1", log)
    if a.sink == "socat":
        start(["socat", "-u", f"UDP-RECV:{SINK_PORT},bind=127.0.0.1,rcvbuf=4194304",
               "OPEN:/dev/null"], "1", log)
    else:
        import socket
        sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sink.bind(("127.0.0.1", SINK_PORT))
    res = {label: [] for label, _ in variants}
    try:
        wait_listen(BE_PORT)
        for rnd in range(a.rounds):
            for label, cmd in variants:
                us, rps, lines = point(cmd, a.secs, log)
                res[label].append((us, rps, lines))
                print(f"round {rnd + 1} {label:18}: {us:6.2f} us CPU/request  {rps:9.0f} req/s  "
                      f"{lines:5.2f} datagrams/request", flush=True)
    finally:
        for p in list(reversed(PROCS)):
            stop(p)
    print(f"\nkeep-alive, wrk -c50, empty body, one proxy thread, sink {a.sink}; "
          f"medians of {a.rounds} rounds:\n")
    print("| variant | CPU µs/request (range) | requests/s | datagrams/request |")
    print("|---|---|---|---|")
    med = {}
    for label, rows in res.items():
        med[label] = statistics.median(r[0] for r in rows)
        lo, hi = min(r[0] for r in rows), max(r[0] for r in rows)
        print(f"| {label} | {med[label]:.2f} ({lo:.2f}-{hi:.2f}) | "
              f"{statistics.median(r[1] for r in rows):.0f} | {statistics.median(r[2] for r in rows):.2f} |")
    print()
    f, fl, h, hl = (med[k] for k in ("fulcrum", "fulcrum httplog", "haproxy", "haproxy httplog"))
    print(f"Fulcrum httplog / HAProxy httplog: {fl / hl:.3f}x (target <= 0.85)")
    print(f"Fulcrum httplog - Fulcrum without logging: {fl - f:+.2f} us (target <= +1.5)")
    print(f"HAProxy httplog - HAProxy without logging: {hl - h:+.2f} us")
    if a.bin_b:
        bf, bfl = med["B fulcrum"], med["B fulcrum httplog"]
        print(f"B: httplog {bfl:.2f} us, without {bf:.2f} us; B/A httplog {bfl / fl:.3f}")


if __name__ == "__main__":
    sys.exit(main())
