#!/usr/bin/env python3
"""bench/checks.py: what health checks cost (issue 11), Fulcrum beside HAProxy 2.6.

  python3 bench/checks.py cost [--servers 1000] [--inter 100] [--http] [--rounds 3] [--secs 10]
      N servers checked every `inter` ms against one local test server, each proxy alone with
      one thread on CPU 0: CPU milliseconds per second and microseconds per check (checks are
      counted by the kernel's TCP ActiveOpens, so a proxy that falls behind shows it).
  python3 bench/checks.py keepalive [--rounds 5] [--secs 5]
      Fulcrum's keep-alive CPU per request (wrk -c50) with one server, without checks and with
      `check inter 100ms`, interleaved rounds.
  python3 bench/checks.py ab --bin-b PATH [--rounds 5] [--secs 5]
      The same keep-alive point for two Fulcrum binaries (--bin, --bin-b), interleaved.

Every process it starts is stopped by PID; ports are 127.0.0.1:24300..24310. Needs haproxy and
wrk (Debian packages); builds nothing: pass --bin (default target/release/fulcrum).
"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HZ = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BE_PORT, FE_PORT = 24300, 24301
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


def active_opens():
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("ActiveOpens")])


def config(servers, inter, http, checks=True):
    lines = [
        "global", "    nbthread 1", "defaults", "    mode http" if http else "    mode tcp",
        "    timeout connect 1s", "    timeout client 5s", "    timeout server 5s",
        "frontend fe", f"    bind 127.0.0.1:{FE_PORT}", "    default_backend be", "backend be",
    ]
    if checks:
        lines.insert(7, "    timeout check 1s")
    if http and checks:
        lines.append("    option httpchk GET /")
    for i in range(servers):
        opts = f" check inter {inter}" if checks else ""
        lines.append(f"    server s{i} 127.0.0.1:{BE_PORT}{opts}")
    return "\n".join(lines) + "\n"


def proxy_cmd(name, binary, cfg):
    return [binary if name == "fulcrum" else "haproxy", "-db", "-f", cfg]


def cost(a, tmp, log):
    cfg = os.path.join(tmp, "checks.cfg")
    with open(cfg, "w") as f:
        f.write(config(a.servers, a.inter, a.http))
    res = {"fulcrum": [], "haproxy": []}
    for rnd in range(a.rounds):
        for name in ("fulcrum", "haproxy"):
            p = start(proxy_cmd(name, a.bin, cfg), "0", log)
            wait_listen(FE_PORT)
            time.sleep(1.0)  # the first checks are spread over one interval: let them settle
            c0, o0, t0 = cpu_ticks(p.pid), active_opens(), time.time()
            time.sleep(a.secs)
            c1, o1, t1 = cpu_ticks(p.pid), active_opens(), time.time()
            stop(p)
            wall = t1 - t0
            cpu_ms = (c1 - c0) / HZ * 1000 / wall
            checks = (o1 - o0) / wall
            res[name].append((cpu_ms, checks))
            print(f"round {rnd + 1} {name:8}: {cpu_ms:7.1f} ms CPU/s  {checks:8.0f} checks/s  "
                  f"{cpu_ms * 1000 / max(checks, 1):6.1f} us/check", flush=True)
    print()
    kind = "httpchk" if a.http else "connect"
    print(f"{a.servers} servers, {kind} check every {a.inter} ms "
          f"(expected {a.servers * 1000 / a.inter:.0f} checks/s), medians of {a.rounds} rounds:")
    for name, rows in res.items():
        cpu = statistics.median(r[0] for r in rows)
        n = statistics.median(r[1] for r in rows)
        print(f"  {name:8} {cpu:7.1f} ms CPU per second, {n:8.0f} checks/s, "
              f"{cpu * 1000 / max(n, 1):6.1f} us CPU per check")
    f, h = (statistics.median(r[0] for r in res[k]) for k in ("fulcrum", "haproxy"))
    print(f"  Fulcrum/HAProxy CPU: {f / h:.2f}x")


def wrk(secs):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c50", f"-d{int(secs)}s",
                          f"http://127.0.0.1:{FE_PORT}/"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("Requests/sec"):
            pass
        if "requests in" in line:
            return int(line.split()[0])
    raise RuntimeError(out)


def keepalive_point(binary, cfg, secs, log):
    p = start([binary, "-db", "-f", cfg], "0", log)
    wait_listen(FE_PORT)
    wrk(1)  # warm-up
    c0 = cpu_ticks(p.pid)
    reqs = wrk(secs)
    c1 = cpu_ticks(p.pid)
    stop(p)
    return (c1 - c0) / HZ * 1e6 / reqs, reqs / secs


def keepalive(a, tmp, log, variants):
    res = {label: [] for label, _, _ in variants}
    for rnd in range(a.rounds):
        for label, binary, cfg in variants:
            us, rps = keepalive_point(binary, cfg, a.secs, log)
            res[label].append((us, rps))
            print(f"round {rnd + 1} {label:22}: {us:6.2f} us CPU/request  {rps:9.0f} req/s", flush=True)
    print(f"\nkeep-alive, wrk -c50, medians of {a.rounds} rounds:")
    meds = {}
    for label, rows in res.items():
        meds[label] = statistics.median(r[0] for r in rows)
        spread = (min(r[0] for r in rows), max(r[0] for r in rows))
        print(f"  {label:22} {meds[label]:6.2f} us CPU/request (range {spread[0]:.2f}-{spread[1]:.2f}), "
              f"{statistics.median(r[1] for r in rows):9.0f} req/s")
    labels = list(meds)
    print(f"  {labels[1]} / {labels[0]}: {meds[labels[1]] / meds[labels[0]]:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["cost", "keepalive", "ab"])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/fulcrum"))
    ap.add_argument("--bin-b")
    ap.add_argument("--servers", type=int, default=1000)
    ap.add_argument("--inter", type=int, default=100)
    ap.add_argument("--http", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=float, default=10)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fulcrum-checks-")
    log = open(os.path.join(tmp, "log"), "ab")
    be = start([a.bin, "testserver", "-L", f"127.0.0.1:{BE_PORT}", "-n", "s1", "-t", "1", "-q"], "1", log)
    try:
        wait_listen(BE_PORT)
        if a.mode == "cost":
            cost(a, tmp, log)
        else:
            plain, checked = os.path.join(tmp, "plain.cfg"), os.path.join(tmp, "checked.cfg")
            with open(plain, "w") as f:
                f.write(config(1, 100, True, checks=False))
            with open(checked, "w") as f:
                f.write(config(1, 100, True, checks=True))
            if a.mode == "keepalive":
                variants = [("no checks", a.bin, plain), ("check inter 100ms", a.bin, checked)]
            else:
                if not a.bin_b:
                    sys.exit("ab needs --bin-b")
                variants = [("A " + os.path.basename(os.path.dirname(os.path.dirname(a.bin))), a.bin, plain),
                            ("B " + os.path.basename(os.path.dirname(os.path.dirname(a.bin_b))), a.bin_b, plain)]
            keepalive(a, tmp, log, variants)
    finally:
        for p in list(reversed(PROCS)):
            stop(p)


if __name__ == "__main__":
    main()
