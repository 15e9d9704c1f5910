#!/usr/bin/env python3
"""bench/driver.py: the scenarios of issue 4 (Fulcrum vs HAProxy vs nginx vs direct), started by
bench/run. Owns: the generated configs (one haproxy.cfg per scenario, read by BOTH Fulcrum and
HAProxy, and the equivalent nginx.conf), starting and stopping every process (by PID, on exit
too), CPU placement, warm-up, the interleaved rounds, the measurements (wrk + bench/wrk-report.lua,
/proc/<pid>/stat, /proc/<pid>/status) and the outputs: raw.csv, results.md and the PNG plots.

Python 3 standard library only; plots are drawn by gnuplot (bench/run installs gnuplot-nox).
"""
import argparse
import csv
import datetime
import http.client
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HZ = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
PROCS = []  # every Popen this driver started, stopped in reverse order on exit
A = None  # parsed arguments
LOG = None  # the run's log file


# ---------------------------------------------------------------------------- processes

def say(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    if LOG:
        LOG.write(line + "\n")
        LOG.flush()


def start(name, cmd, cpus, env=None):
    """Starts cmd pinned to cpus (taskset), output to <out>/logs/<name>.log; tracked for cleanup."""
    logf = open(os.path.join(A.out, "logs", name + ".log"), "ab")
    full = ["taskset", "-c", cpus] + cmd
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.Popen(full, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         env=e, start_new_session=True)
    p.bench_name = name
    PROCS.append(p)
    return p


def stop(p, sig=signal.SIGTERM):
    """Stops one process we started, by its PID (then its own process group if it lingers)."""
    if p.poll() is None:
        try:
            os.kill(p.pid, sig)
            p.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)  # its own session: nginx's workers
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
    if p in PROCS:
        PROCS.remove(p)


def cleanup():
    for p in list(reversed(PROCS)):
        stop(p)


def port_free(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_listen(port, proc=None, timeout=15.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.bench_name} exited with status {proc.returncode} "
                               f"(see {A.out}/logs/{proc.bench_name}.log)")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def tree(root):
    """The PID of root and of all its descendants (nginx: master + workers)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def ticks(pids):
    """utime + stime (clock ticks) summed over pids, per pid."""
    t = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            t[p] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return t


def status_kb(pids, key):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        except (OSError, ValueError):
            pass
    return total


def machine_busy():
    """Ticks of the whole machine from /proc/stat: (user+nice+system, everything but idle and
    iowait). The first, less our processes' utime+stime, is the other users' load."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2], sum(v) - v[3] - v[4]


def cpu_list(spec):
    """CPU numbers of a taskset list such as "0", "1,3" or "0-1"."""
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def softirq_ticks(cpus):
    """Ticks the given CPUs spent in softirq (/proc/stat). On loopback, the kernel delivers a
    packet in softirq on the CPU that sent it, or on the CPU whose ACK made the sender's queued
    data go out: work that no process's utime+stime counts, but that decides which CPU is full."""
    want = {f"cpu{c}" for c in cpus}
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            v = line.split()
            if v and v[0] in want:
                total += int(v[7])
    return total


def count_established(port):
    """Established TCP connections whose remote port is `port` (the proxy's server side)."""
    n = 0
    hexport = f":{port:04X}"
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[2].endswith(hexport) and parts[3] == "01":
                        n += 1
        except OSError:
            pass
    return n


# ---------------------------------------------------------------------------- targets

class Target:
    """One contender in one scenario point: a port to load, the process to measure and its own
    backend (a test server of its own, so that one contender's connections, TIME_WAIT sockets
    and server-side counters never touch another's)."""

    def __init__(self, name, port, proc=None, cpus=None):
        self.name, self.port, self.proc = name, port, proc
        self.cpus = cpus or A.proxy_cpus  # the proxy's CPUs (the direct run has no proxy)
        self.be_port = be_port(name)
        self.be_proc = BACKENDS[name]

    def pids(self):
        return tree(self.proc.pid) if self.proc else []


CONTENDERS = ["fulcrum", "haproxy", "nginx", "direct"]
BACKENDS = {}  # contender -> its test server (Popen)


def be_port(name):
    return A.port_base + CONTENDERS.index(name)


def fe_port(name):
    return A.port_base + 10 + CONTENDERS.index(name)


def backend_stats(port):
    """The test server's counters (GET /__stats): conns, closed, requests, bytes."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", "/__stats")
        text = c.getresponse().read().decode()
    finally:
        c.close()
    return {k: int(v) for k, v in (l.split() for l in text.splitlines() if l.strip())}


def start_backends():
    for n in CONTENDERS:
        port = be_port(n)
        BACKENDS[n] = start(f"backend-{n}", [A.bin, "testserver", "-L", f"127.0.0.1:{port}", "-n", "s1",
                                             "-t", "1", "-q"], A.load_cpus)
    for n in CONTENDERS:
        wait_listen(be_port(n), BACKENDS[n])


HAPROXY_HEAD = """\
# Generated by bench/driver.py ({what}). Read by BOTH Fulcrum and HAProxy: the same file;
# the ports come from the environment (FE_PORT, BE_PORT) so both can run side by side.
global
    nbthread {nbthread}
    maxconn {maxconn}
{fd_note}
defaults
    mode {mode}
    maxconn {maxconn}
    timeout connect 5s
    timeout client 30s
    timeout server 30s
"""

HTTP_TIMEOUTS = """\
    timeout http-request 10s
    timeout http-keep-alive 30s
"""


def haproxy_cfg(what, mode="http", nbthread=1, rules=None, reuse=None):
    """rules: None (default_backend only), an int N (N acl + use_backend lines, the request
    matches the last) or "map" (use_backend %[path,map_beg(file)] over a 10,000-entry map)."""
    fd_note = ""
    if A.maxconn < 30000:
        # The open-file limit forced a small maxconn. HAProxy stops keeping idle server
        # connections once 20% of its maxconn-derived file descriptors are in use
        # (tune.pool-low-fd-ratio) and kills them above 25% (tune.pool-high-fd-ratio): with 5,000
        # clients it would open a server connection for nearly every request. Give it the room it
        # has with maxconn 30000, as on a machine where bench/run can raise the limit (Fulcrum has
        # no such knobs, and does not need them).
        fd_note = ('.if streq("$BENCH_PROXY",haproxy)\n'
                   "    tune.pool-low-fd-ratio 80\n"
                   "    tune.pool-high-fd-ratio 90\n"
                   ".endif\n")
    c = HAPROXY_HEAD.format(what=what, nbthread=nbthread, maxconn=A.maxconn, mode=mode, fd_note=fd_note)
    if mode == "http":
        c += HTTP_TIMEOUTS
    if reuse:
        c += f"    http-reuse {reuse}\n"
    c += '\nfrontend fe\n    bind "127.0.0.1:${FE_PORT}" backlog 4096\n'
    if rules == "map":
        c += f'    use_backend %[path,map_beg({A.cfgdir}/paths.map,miss)]\n'
    elif rules:
        for i in range(rules):
            c += f"    acl r{i} path_beg /r{i}/\n"
        for i in range(rules):
            c += f"    use_backend {'be' if i == rules - 1 else 'miss'} if r{i}\n"
    c += f"    default_backend {'miss' if rules else 'be'}\n"
    c += '\nbackend be\n    server s1 "127.0.0.1:${BE_PORT}"\n'
    if rules:
        c += "\nbackend miss\n    http-request deny deny_status 404\n"
        c += '    server s1 "127.0.0.1:${BE_PORT}"\n'
    return c


def write_map(path, n=10000):
    with open(path, "w") as f:
        for i in range(n - 1):
            f.write(f"/m{i}/ miss\n")
        f.write(f"/m{n - 1}/ be\n")  # the request matches the last entry


def stream_module_line():
    v = subprocess.run(["nginx", "-V"], capture_output=True, text=True).stderr
    if "--with-stream " in v + " " and "--with-stream=dynamic" not in v:
        return ""
    for p in ("/usr/lib/nginx/modules/ngx_stream_module.so", "/usr/share/nginx/modules/ngx_stream_module.so"):
        if os.path.exists(p):
            return f"load_module {p};\n"
    return None


def nginx_conf(d, mode, workers=1):
    """nginx equivalent of haproxy_cfg(): same timeouts, upstream keep-alive, no access log,
    responses streamed through a 16 kB buffer (HAProxy's bufsize) without disk spooling."""
    p = {"nginx": fe_port("nginx"), "backend": be_port("nginx")}
    head = ""
    if mode == "tcp":
        head = stream_module_line() or ""
    c = head + f"""\
# Generated by bench/driver.py: the nginx equivalent of haproxy.cfg ({mode}).
daemon off;
master_process on;
worker_processes {workers};
worker_rlimit_nofile {A.nofile};
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{
    worker_connections {A.maxconn * 2};
}}
"""
    if mode == "tcp":
        c += f"""\
stream {{
    server {{
        listen 127.0.0.1:{p['nginx']} backlog=4096;
        proxy_pass 127.0.0.1:{p['backend']};
        proxy_connect_timeout 5s;
        proxy_timeout 30s;
        proxy_buffer_size 16k;
    }}
}}
"""
    else:
        c += f"""\
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    keepalive_timeout 30s;          # timeout http-keep-alive
    keepalive_requests 100000000;   # HAProxy has no per-connection request limit
    client_header_timeout 10s;      # timeout http-request
    client_body_timeout 30s;        # timeout client
    send_timeout 30s;               # timeout client
    upstream be {{
        server 127.0.0.1:{p['backend']};
        keepalive {A.maxconn};      # idle server connections kept, as HAProxy's pool
        keepalive_requests 100000000;
        keepalive_timeout 30s;
    }}
    server {{
        listen 127.0.0.1:{p['nginx']} backlog=4096;
        location / {{
            proxy_pass http://be;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_connect_timeout 5s;   # timeout connect
            proxy_read_timeout 30s;     # timeout server
            proxy_send_timeout 30s;
            proxy_buffering off;        # stream like HAProxy ...
            proxy_buffer_size 16k;      # ... through a bufsize-sized buffer
            proxy_buffers 4 16k;        # (unused without buffering, but checked)
            proxy_busy_buffers_size 32k;
        }}
    }}
}}
"""
    return c


def start_contenders(label, names, mode="http", nbthread=1, rules=None, proxy_cpus=None, reuse=None):
    """Writes the configs for this point and starts the named contenders; returns {name: Target}."""
    d = os.path.join(A.cfgdir, label)
    os.makedirs(d, exist_ok=True)
    cfg = os.path.join(d, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(haproxy_cfg(f"{label}: mode {mode}, nbthread {nbthread}", mode, nbthread, rules, reuse))
    cpus = proxy_cpus or A.proxy_cpus
    out = {}
    for n in names:
        if n == "direct":
            out[n] = Target(n, be_port(n))
            continue
        if not port_free(fe_port(n)):
            raise RuntimeError(f"port {fe_port(n)} is taken: choose another --port-base")
        env = {"FE_PORT": str(fe_port(n)), "BE_PORT": str(be_port(n)), "BENCH_PROXY": n}
        if n == "fulcrum":
            chk = subprocess.run([A.bin, "-c", "-f", cfg], capture_output=True, text=True, env={**os.environ, **env})
            if chk.returncode != 0:
                raise RuntimeError(f"fulcrum -c refuses {cfg}:\n{chk.stdout}{chk.stderr}")
            proc = start(f"{label}-fulcrum", [A.bin, "-f", cfg, "-db"], cpus, env)
        elif n == "haproxy":
            chk = subprocess.run(["haproxy", "-c", "-f", cfg], capture_output=True, text=True, env={**os.environ, **env})
            if chk.returncode != 0:
                raise RuntimeError(f"haproxy -c refuses {cfg}:\n{chk.stdout}{chk.stderr}")
            proc = start(f"{label}-haproxy", ["haproxy", "-f", cfg, "-db"], cpus, env)
        elif n == "nginx":
            nd = os.path.join(d, "nginx")
            os.makedirs(nd, exist_ok=True)
            conf = os.path.join(nd, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(nd, mode, nbthread))
            proc = start(f"{label}-nginx", ["nginx", "-p", nd, "-c", conf, "-e", nd + "/error.log"], cpus)
        else:
            raise ValueError(n)
        out[n] = Target(n, fe_port(n), proc)
    for t in out.values():
        wait_listen(t.port, t.proc)
    if "nginx" in out:
        time.sleep(0.2)  # the workers fork after the master listens
    return out


def stop_contenders(targets):
    for t in targets.values():
        if t.proc:
            stop(t.proc)


# ---------------------------------------------------------------------------- load

def preflight(t, path, body_len):
    """One request through the target: status 200 and the expected body length, or an error."""
    c = http.client.HTTPConnection("127.0.0.1", t.port, timeout=10)
    try:
        c.request("GET", path, headers={"Host": "bench"})
        r = c.getresponse()
        body = r.read()
    finally:
        c.close()
    if r.status != 200 or len(body) != body_len:
        raise RuntimeError(f"{t.name}: GET {path} gave {r.status} with {len(body)} bytes "
                           f"(expected 200 with {body_len})")


def warmup(t, conns, path):
    """h2load for A.warmup seconds (bounded, killed by PID if it overruns: with thousands of
    connections its connect phase can stall): warms the proxy; returns a note if anything failed."""
    cmd = ["taskset", "-c", A.load_cpus, "h2load", "--h1", "-t", "1", "-c", str(conns),
           "-D", f"{int(A.warmup * 1000)}ms", f"http://127.0.0.1:{t.port}{path}"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    p.bench_name = "h2load"
    PROCS.append(p)
    try:
        out, _ = p.communicate(timeout=A.warmup + 10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return "warm-up cut short"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        PROCS.remove(p)
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not m or int(m.group(1)) == 0 or sum(int(x) for x in m.groups()[1:]):
        return "warm-up not all 2xx"
    return ""


def run_wrk(t, conns, path, duration, headers=(), delay_ms=None):
    """One measured run: wrk on the load CPUs; CPU of the proxy, the backend and wrk itself.
    delay_ms: each connection waits that long between a response and its next request (wrk's
    delay hook, see wrk-report.lua), so the offered load is about conns / (delay + latency)."""
    url = f"http://127.0.0.1:{t.port}{path}"
    cmd = ["taskset", "-c", A.load_cpus, "wrk", "-t1", f"-c{conns}", f"-d{duration}s",
           "--timeout", "5s", "-s", os.path.join(HERE, "wrk-report.lua")]
    for h in headers:
        cmd += ["-H", h]
    cmd.append(url)
    pids = t.pids()
    be_pids = tree(t.be_proc.pid)
    st0 = backend_stats(t.be_port)
    pc, lc = cpu_list(t.cpus), cpu_list(A.load_cpus)
    sq0 = (softirq_ticks(pc), softirq_ticks(lc))
    t0, b0, m0, w0 = ticks(pids), ticks(be_pids), machine_busy(), time.time()
    outf = open(os.path.join(A.out, "logs", "wrk-last.out"), "w+")
    env = dict(os.environ, BENCH_DELAY_MS=str(delay_ms)) if delay_ms else None
    p = subprocess.Popen(cmd, stdout=outf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    p.bench_name = "wrk"
    PROCS.append(p)
    killer = threading.Timer(duration + 60, lambda: p.returncode is None and p.kill())
    killer.daemon = True
    killer.start()
    _, status, ru = os.wait4(p.pid, 0)  # reaps wrk and gives its own CPU time
    p.returncode = status
    killer.cancel()
    PROCS.remove(p)
    wall = time.time() - w0
    t1, b1, m1 = ticks(pids), ticks(be_pids), machine_busy()
    sq1 = (softirq_ticks(pc), softirq_ticks(lc))
    st1 = backend_stats(t.be_port)
    outf.seek(0)
    text = outf.read()
    outf.close()
    vals = {}
    for line in text.splitlines():
        if line.startswith("BENCH "):
            for kv in line.split()[1:]:
                k, v = kv.split("=")
                vals[k] = float(v)
    if "requests" not in vals or "p50" not in vals:
        raise RuntimeError(f"wrk gave no figures for {t.name} ({' '.join(cmd)}):\n{text}")
    proxy_s = sum(t1[p_] - t0.get(p_, 0) for p_ in t1) / HZ if pids else None
    be_s = sum(b1[p_] - b0.get(p_, 0) for p_ in b1) / HZ
    wrk_s = ru.ru_utime + ru.ru_stime
    reqs = vals["requests"]
    secs = vals["duration_us"] / 1e6
    ours = (proxy_s or 0) + be_s + wrk_s
    foreign = max(0.0, (m1[0] - m0[0]) / HZ - ours) / (wall * NCPU) * 100
    busy = (m1[1] - m0[1]) / HZ / (wall * NCPU) * 100
    errs = {k: int(vals[k]) for k in ("connect", "read", "write", "status", "timeout")}
    row = {
        "requests": int(reqs), "duration_s": round(secs, 3), "rps": round(reqs / secs, 1),
        "bytes": int(vals["bytes"]), "gbps": round(vals["bytes"] * 8 / secs / 1e9, 3),
        "proxy_cpu_s": proxy_s, "cpu_us_per_req": round(proxy_s * 1e6 / reqs, 3) if proxy_s is not None and reqs else None,
        "cpu_us_per_mb": round(proxy_s * 1e6 / (vals["bytes"] / 1e6), 2) if proxy_s is not None and vals["bytes"] else None,
        "proxy_util_pct": round(proxy_s / wall * 100, 1) if proxy_s is not None else None,
        "backend_cpu_s": round(be_s, 3), "client_cpu_s": round(wrk_s, 3),
        "other_load_pct": round(foreign, 1), "machine_busy_pct": round(busy, 1),
        "softirq_proxy_cpu_s": (sq1[0] - sq0[0]) / HZ, "softirq_load_cpu_s": (sq1[1] - sq0[1]) / HZ,
        "p50_us": vals["p50"], "p75_us": vals["p75"], "p90_us": vals["p90"], "p99_us": vals["p99"],
        "p999_us": vals["p99.9"], "p9999_us": vals["p99.99"], "max_us": vals["max"],
        "hwm_kb": status_kb(t.pids(), "VmHWM") if pids else None,
        "server_conns_per_kreq": round((st1["conns"] - st0["conns"]) * 1000 / reqs, 1) if reqs else None,
        "errors": sum(errs.values()), "error_detail": " ".join(f"{k}={v}" for k, v in errs.items() if v),
    }
    return row


# ---------------------------------------------------------------------------- records

ROWS = []
CSV_FIELDS = ["scenario", "point", "contender", "round", "requests", "duration_s", "rps", "bytes",
              "gbps", "proxy_cpu_s", "cpu_us_per_req", "cpu_us_per_mb", "proxy_util_pct",
              "backend_cpu_s", "client_cpu_s", "other_load_pct", "machine_busy_pct",
              "softirq_proxy_cpu_s", "softirq_load_cpu_s", "p50_us", "p75_us", "p90_us",
              "p99_us", "p999_us", "p9999_us", "max_us", "hwm_kb", "server_conns_per_kreq", "errors", "error_detail",
              "rss_before_kb", "rss_after_kb", "idle_conns", "bytes_per_conn", "server_conns", "note"]


def record(scen, point, contender, rnd, row):
    row.update(scenario=scen, point=point, contender=contender, round=rnd)
    ROWS.append(row)
    with open(os.path.join(A.out, "raw.csv"), "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        if f.tell() == 0:
            w.writeheader()
        w.writerow(row)
    bits = [f"{scen}/{point:<9} {contender:<8} r{rnd}"]
    if row.get("rps") is not None:
        bits.append(f"{row['rps']:>10.0f} req/s")
    if row.get("gbps") and row["gbps"] > 0.5:
        bits.append(f"{row['gbps']:.2f} Gbit/s")
    if row.get("cpu_us_per_req") is not None:
        bits.append(f"{row['cpu_us_per_req']:.2f} us/req")
    if row.get("server_conns_per_kreq"):
        bits.append(f"{row['server_conns_per_kreq']:.0f} srv conns/1k req")
    if row.get("p999_us") is not None:
        bits.append(f"p99.9 {row['p999_us'] / 1000:.2f} ms")
    if row.get("bytes_per_conn") is not None:
        bits.append(f"{row['bytes_per_conn']:.0f} B/idle conn ({row['idle_conns']} conns, "
                    f"{row['server_conns']} server conns)")
    if row.get("errors"):
        bits.append(f"ERRORS {row['error_detail']}")
    if row.get("note"):
        bits.append(f"[{row['note']}]")
    say("  " + "  ".join(bits))


def interleaved(scen, points, targets_for, names):
    """The common loop: for each point, R rounds of A B C ...; warm-up before each contender's
    first measurement; after the preflight check of every contender."""
    for pt in points:
        targets = targets_for(pt)
        try:
            for n in names:
                if n in targets:
                    preflight(targets[n], pt["path"], pt["body"])
            notes = {}
            for rnd in range(1, A.rounds + 1):
                for n in names:
                    if n not in targets:
                        continue
                    t = targets[n]
                    if rnd == 1:
                        notes[n] = warmup(t, pt["conns"], pt["path"])
                    row = run_wrk(t, pt["conns"], pt["path"], A.duration, pt.get("headers", ()),
                                  pt.get("delay_ms"))
                    row["note"] = notes.get(n, "")
                    record(scen, pt["label"], n, rnd, row)
        finally:
            if pt.get("own_procs"):
                stop_contenders(targets)


# ---------------------------------------------------------------------------- scenarios

SMALL = "/?s=0"  # as in the seeds: an empty body


def scen_a():
    say("== a: HTTP keep-alive, small response, 50 / 500 / 5000 connections")
    names = ["fulcrum", "haproxy", "nginx", "direct"]
    tg = start_contenders("a", names)
    try:
        pts = [{"label": f"c{c}", "conns": c, "path": SMALL, "body": 0} for c in (50, 500, 5000)]
        # Latency at the same offered load: at saturation a faster proxy also saturates the
        # load CPU it shares nothing with but the machine (wrk and the backend on one CPU), and
        # the tail then measures wrk's and the backend's own scheduling. Paced, each of the 50
        # connections waits 1 ms after each response: about 40,000 req/s offered to every
        # contender, under all of their maxima, with the load CPU not saturated.
        pts.append({"label": "c50-paced", "conns": 50, "path": SMALL, "body": 0, "delay_ms": 1})
        interleaved("a", pts, lambda pt: tg, names)
    finally:
        stop_contenders(tg)


def scen_b():
    say("== b: a new client connection per request (Connection: close), small response")
    names = ["fulcrum", "haproxy", "nginx", "direct"]
    # close: the shared config (http-reuse safe, HAProxy's default: a session's first request
    # never reuses another session's idle server connection, so each client connection costs a
    # server connection too); close-always: `http-reuse always`, so the figure is the cost of
    # the client connection alone (nginx reuses upstream connections that way by default).
    pts = [{"label": "close", "reuse": None}, {"label": "close-always", "reuse": "always"}]
    for pt in pts:
        pt.update(conns=50, path=SMALL, body=0, headers=["Connection: close"], own_procs=True)
    interleaved("b", pts, lambda pt: start_contenders(
        f"b-{pt['label']}", names if pt["reuse"] is None else names[:3], reuse=pt["reuse"]), names)


def scen_c():
    say("== c: large responses (64 kB, 1 MB), 50 connections, keep-alive")
    names = ["fulcrum", "haproxy", "nginx", "direct"]
    tg = start_contenders("c", names)
    try:
        pts = [{"label": "64k", "conns": 50, "path": "/?s=64k", "body": 65536},
               {"label": "1m", "conns": 50, "path": "/?s=1m", "body": 1048576}]
        interleaved("c", pts, lambda pt: tg, names)
    finally:
        stop_contenders(tg)


def scen_d():
    say("== d: mode tcp bulk transfer (1 MB HTTP responses carried by mode tcp / nginx stream)")
    names = ["fulcrum", "haproxy", "nginx", "direct"]
    if stream_module_line() is None:
        say("   nginx has no stream module (apt-get install libnginx-mod-stream): nginx left out of d")
        names.remove("nginx")
    tg = start_contenders("d", names, mode="tcp")
    try:
        pts = [{"label": "1m", "conns": 50, "path": "/?s=1m", "body": 1048576}]
        interleaved("d", pts, lambda pt: tg, names)
    finally:
        stop_contenders(tg)


RULE_POINTS = [0, 10, 100, 1000, "map"]


def scen_e():
    say("== e: rule cost: 0/10/100/1000 acl + use_backend (the last one matches), 10,000-entry map_beg")
    write_map(os.path.join(A.cfgdir, "paths.map"))
    names = ["fulcrum", "haproxy"]
    pts = []
    for r in RULE_POINTS:
        if r == "map":
            pts.append({"label": "map10k", "rules": "map", "path": "/m9999/?s=0"})
        else:
            pts.append({"label": f"r{r}", "rules": r, "path": f"/r{r - 1}/?s=0" if r else SMALL})
    for pt in pts:
        pt.update(conns=50, body=0, own_procs=True)
    interleaved("e", pts, lambda pt: start_contenders(f"e-{pt['label']}", names, rules=pt["rules"]), names)


def scen_f():
    say(f"== f: {A.idle} idle keep-alive client connections: memory per connection")
    names = ["fulcrum", "haproxy", "nginx"]
    for rnd in range(1, A.idle_rounds + 1):
        for n in names:
            tg = start_contenders(f"f-{n}", [n])
            t = tg[n]
            client = None
            try:
                preflight(t, SMALL, 0)
                warmup(t, 50, SMALL)
                time.sleep(0.5)
                before = status_kb(t.pids(), "VmRSS")
                client = subprocess.Popen(
                    ["taskset", "-c", A.load_cpus, sys.executable, os.path.join(HERE, "idle_conns.py"),
                     "--port", str(t.port), "-n", str(A.idle), "--hold", "120"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                PROCS.append(client)
                client.bench_name = "idle-client"
                line = ""
                ready = threading.Event()
                box = {}

                def reader():
                    box["line"] = client.stdout.readline()
                    ready.set()
                threading.Thread(target=reader, daemon=True).start()
                if not ready.wait(120):
                    raise RuntimeError("idle client did not open its connections within 120 s")
                line = box["line"]
                m = re.match(r"READY ok=(\d+) failed=(\d+)", line)
                if not m:
                    raise RuntimeError(f"idle client: {line!r}")
                ok, failed = int(m.group(1)), int(m.group(2))
                time.sleep(1.0)
                after = status_kb(t.pids(), "VmRSS")
                server_conns = count_established(t.be_port)
                row = {"rss_before_kb": before, "rss_after_kb": after, "idle_conns": ok,
                       "bytes_per_conn": round((after - before) * 1024 / max(ok, 1), 1),
                       "server_conns": server_conns, "hwm_kb": status_kb(t.pids(), "VmHWM"),
                       "errors": failed, "error_detail": f"failed={failed}" if failed else "",
                       "note": ""}
                record("f", "idle", n, rnd, row)
            finally:
                if client:
                    try:
                        client.stdin.close()
                    except OSError:
                        pass
                    try:
                        client.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        pass
                    stop(client)
                stop_contenders(tg)


def scen_g():
    say("== g: nbthread 1 vs 2, Fulcrum and HAProxy, 500 connections")
    names = ["fulcrum", "haproxy"]
    all_cpus = ",".join(sorted(set(A.proxy_cpus.split(",") + A.load_cpus.split(",")), key=int))
    pts = [{"label": "t1", "nbthread": 1, "cpus": A.proxy_cpus},
           {"label": "t2", "nbthread": 2, "cpus": all_cpus}]
    for pt in pts:
        pt.update(conns=500, path=SMALL, body=0, own_procs=True)
    say(f"   placement: t1 proxy on CPU {A.proxy_cpus}; t2 proxy on CPUs {all_cpus}; "
        f"wrk and the backend on CPU {A.load_cpus} in both")
    interleaved("g", pts, lambda pt: start_contenders(
        f"g-{pt['label']}", names, nbthread=pt["nbthread"], proxy_cpus=pt["cpus"]), names)


SCENARIOS = {"a": scen_a, "b": scen_b, "c": scen_c, "d": scen_d, "e": scen_e, "f": scen_f, "g": scen_g}


# ---------------------------------------------------------------------------- report

def rows(scen, point=None, contender=None):
    return [r for r in ROWS if r["scenario"] == scen and (point is None or r["point"] == point)
            and (contender is None or r["contender"] == contender)]


def med(rs, key):
    v = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(v) if v else None


def spread(rs, key):
    v = [r[key] for r in rs if r.get(key) is not None]
    return (min(v), max(v)) if v else (None, None)


def fmt(x, nd=2):
    if x is None:
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{nd}f}"


def fmt_ms(us):
    return "–" if us is None else f"{us / 1000:.3f}"


def cell(rs, key, nd=2):
    m = med(rs, key)
    lo, hi = spread(rs, key)
    if m is None:
        return "–"
    if len([r for r in rs if r.get(key) is not None]) > 1:
        return f"{fmt(m, nd)} ({fmt(lo, nd)}–{fmt(hi, nd)})"
    return fmt(m, nd)


def ratio(a, b):
    return a / b if a is not None and b else None


def fr(x):
    return "–" if x is None else f"{x:.2f}x"


def points_of(scen):
    seen = []
    for r in ROWS:
        if r["scenario"] == scen and r["point"] not in seen:
            seen.append(r["point"])
    return seen


def contenders_of(scen):
    order = ["fulcrum", "haproxy", "nginx", "direct"]
    have = {r["contender"] for r in ROWS if r["scenario"] == scen}
    return [c for c in order if c in have]


def per_mb(rs, seconds):
    """Median over runs of seconds(run) in µs per MB moved."""
    return statistics.median([seconds(r) * 1e6 / (r["bytes"] / 1e6) for r in rs if r.get("bytes")])


def load_table(scen, bytes_too=False):
    h = "| point | contender | req/s | " + ("Gbit/s | CPU µs/MB | load side µs/MB | softirq µs/MB proxy CPU / load CPU | "
                                          if bytes_too else "") + \
        "CPU µs/req | proxy CPU % | other load % | server conns / 1k req | p50 ms | p99 ms | p99.9 ms | p99.99 ms | peak RSS MB | errors |"
    out = [h, "|" + "---|" * (h.count("|") - 1)]
    for pt in points_of(scen):
        for c in contenders_of(scen):
            rs = rows(scen, pt, c)
            if not rs:
                continue
            hwm = max((r["hwm_kb"] for r in rs if r.get("hwm_kb")), default=None)
            errs = sum(r.get("errors") or 0 for r in rs)
            notes = {r.get("note") for r in rs if r.get("note")}
            e = "0" if not errs else f"**{errs}** ⚠"
            if notes:
                e += " (" + "; ".join(sorted(notes)) + ")"
            line = f"| {pt} | {c} | {cell(rs, 'rps', 0)} | "
            if bytes_too:
                side = per_mb(rs, lambda r: r["client_cpu_s"] + r["backend_cpu_s"])
                sp = per_mb(rs, lambda r: r["softirq_proxy_cpu_s"])
                sl = per_mb(rs, lambda r: r["softirq_load_cpu_s"])
                line += f"{cell(rs, 'gbps')} | {cell(rs, 'cpu_us_per_mb', 0)} | {side:.0f} | {sp:.0f} / {sl:.0f} | "
            line += (f"{cell(rs, 'cpu_us_per_req')} | {fmt(med(rs, 'proxy_util_pct'), 0)} | "
                     f"{fmt(med(rs, 'other_load_pct'), 0)} | "
                     f"{fmt(med(rs, 'server_conns_per_kreq'), 1)} | "
                     f"{fmt_ms(med(rs, 'p50_us'))} | {fmt_ms(med(rs, 'p99_us'))} | {fmt_ms(med(rs, 'p999_us'))} | "
                     f"{fmt_ms(med(rs, 'p9999_us'))} | {fmt(hwm / 1024 if hwm else None, 1)} | {e} |")
            out.append(line)
    return out


def verdict(ok_parts):
    """ok_parts: [(label, bool|None)] -> 'PASS' / 'FAIL (label, ...)' / 'n/a'."""
    known = [(l, ok) for l, ok in ok_parts if ok is not None]
    if not known:
        return "n/a"
    bad = [l for l, ok in known if not ok]
    return "**PASS**" if not bad else "**FAIL** (" + ", ".join(bad) + ")"


def errors_in(scen, point):
    return any((r.get("errors") or 0) for r in rows(scen, point))


def report_ratio_table(scen):
    """Ratio rows for a, b, c, d, and the verdict of section 3's target for the scenario."""
    per_byte = scen in "cd"
    if per_byte:
        cols = [("Gbit/s", "gbps"), ("CPU/byte", "cpu_us_per_mb"), ("p99.9", "p999_us")]
    else:
        cols = [("req/s", "rps"), ("CPU/req", "cpu_us_per_req"), ("p99.9", "p999_us")]
    head = " | ".join(f"{l} F/H" for l, _ in cols) + " | " + " | ".join(f"{l} F/N" for l, _ in cols)
    out = ["", f"| point | {head} | target | verdict |", "|---|" + "---|" * (2 * len(cols) + 2)]
    summary = []
    for pt in points_of(scen):
        F, H, N = (rows(scen, pt, c) for c in ("fulcrum", "haproxy", "nginx"))
        rh = {k: ratio(med(F, k), med(H, k)) for _, k in cols}
        rn = {k: ratio(med(F, k), med(N, k)) for _, k in cols}
        if scen == "a" and pt.endswith("-paced"):
            target = "p99.9 ≤ 1.0x at the same offered load"
            v = verdict([("p99.9", rh["p999_us"] <= 1.0 if rh["p999_us"] else None)])
        elif scen == "a":
            target = "CPU ≤ 0.85x, req/s ≥ 1.0x, p99.9 ≤ 1.0x"
            v = verdict([("CPU", rh["cpu_us_per_req"] <= 0.85 if rh["cpu_us_per_req"] else None),
                         ("req/s", rh["rps"] >= 1.0 if rh["rps"] else None),
                         ("p99.9", rh["p999_us"] <= 1.0 if rh["p999_us"] else None)])
        elif scen == "b":
            target = "CPU per connection ≤ 0.95x"
            v = verdict([("CPU", rh["cpu_us_per_req"] <= 0.95 if rh["cpu_us_per_req"] else None)])
        else:
            target = "throughput ≥ 1.0x, CPU/byte ≤ 1.0x"
            v = verdict([("throughput", rh["gbps"] >= 1.0 if rh["gbps"] else None),
                         ("CPU/byte", rh["cpu_us_per_mb"] <= 1.0 if rh["cpu_us_per_mb"] else None)])
        uf, uh = med(F, "proxy_util_pct"), med(H, "proxy_util_pct")
        if scen != "b" and uf is not None and uh is not None and max(uf, uh) < 85:
            v += f" · not proxy-bound (CPU F {uf:.0f}% / H {uh:.0f}%)"
        if per_byte and F and H:
            # Which CPU ran the loopback deliveries (see softirq_ticks): when the load CPU ran
            # more of them with Fulcrum, its peers, not Fulcrum, paid for the bytes.
            lf, lh = (per_mb(X, lambda r: r["softirq_load_cpu_s"]) for X in (F, H))
            if rh["gbps"] and rh["gbps"] < 1.0 and lf > 1.5 * lh:
                v += f" · deliveries on the load CPU (softirq µs/MB F {lf:.0f} / H {lh:.0f})"
        bf, bh = med(F, "machine_busy_pct"), med(H, "machine_busy_pct")
        if scen == "a" and not pt.endswith("-paced") and bf is not None and bh is not None and bf >= 95 > bh:
            v += f" · machine saturated with Fulcrum only (busy F {bf:.0f}% / H {bh:.0f}%)"
        if errors_in(scen, pt):
            v += " ⚠ errors: figures suspect"
        cells = " | ".join(fr(rh[k]) for _, k in cols) + " | " + " | ".join(fr(rn[k]) for _, k in cols)
        out.append(f"| {pt} | {cells} | {target} | {v} |")
        summary.append((f"{scen} {pt}", v))
    return out, summary


def report_e():
    out = ["| rules | Fulcrum CPU µs/req | Fulcrum vs 0 rules | HAProxy CPU µs/req | HAProxy vs 0 rules | F/H |",
           "|---|---|---|---|---|---|"]
    summary = []
    base = {c: med(rows("e", "r0", c), "cpu_us_per_req") for c in ("fulcrum", "haproxy")}
    for pt in points_of("e"):
        F, H = rows("e", pt, "fulcrum"), rows("e", pt, "haproxy")
        out.append(f"| {pt} | {cell(F, 'cpu_us_per_req')} | {fr(ratio(med(F, 'cpu_us_per_req'), base['fulcrum']))} | "
                   f"{cell(H, 'cpu_us_per_req')} | {fr(ratio(med(H, 'cpu_us_per_req'), base['haproxy']))} | "
                   f"{fr(ratio(med(F, 'cpu_us_per_req'), med(H, 'cpu_us_per_req')))} |")
    f1000 = ratio(med(rows("e", "r1000", "fulcrum"), "cpu_us_per_req"), base.get("fulcrum"))
    h1000 = ratio(med(rows("e", "r1000", "haproxy"), "cpu_us_per_req"), base.get("haproxy"))
    fmap = ratio(med(rows("e", "map10k", "fulcrum"), "cpu_us_per_req"), base.get("fulcrum"))
    hmap = ratio(med(rows("e", "map10k", "haproxy"), "cpu_us_per_req"), base.get("haproxy"))
    v = verdict([("1000 rules", f1000 < 1.5 if f1000 else None)])
    if errors_in("e", "r1000") or errors_in("e", "r0"):
        v += " ⚠ errors: figures suspect"
    out += ["", f"Target: Fulcrum's CPU per request with 1,000 rules < 1.5x that with 0 rules: "
            f"{fr(f1000)} (HAProxy {fr(h1000)}) → {v}. "
            f"10,000-entry map_beg: Fulcrum {fr(fmap)}, HAProxy {fr(hmap)} of 0 rules (no target)."]
    summary.append(("e 1000 rules", v))
    return out, summary


def report_f():
    out = ["| contender | bytes per idle connection | RSS before → after MB | idle conns | server conns held | errors |",
           "|---|---|---|---|---|---|"]
    for c in contenders_of("f"):
        rs = rows("f", "idle", c)
        out.append(f"| {c} | {cell(rs, 'bytes_per_conn', 0)} | {fmt(med(rs, 'rss_before_kb') / 1024, 1)} → "
                   f"{fmt(med(rs, 'rss_after_kb') / 1024, 1)} | {fmt(med(rs, 'idle_conns'), 0)} | "
                   f"{fmt(med(rs, 'server_conns'), 0)} | {sum(r.get('errors') or 0 for r in rs)} |")
    F, H, N = (med(rows("f", "idle", c), "bytes_per_conn") for c in ("fulcrum", "haproxy", "nginx"))
    v = verdict([("memory", F <= H if F is not None and H is not None else None)])
    out += ["", f"Fulcrum/HAProxy {fr(ratio(F, H))}, Fulcrum/nginx {fr(ratio(F, N))}. "
            f"Target: no more than HAProxy's → {v}. RSS of the proxy's processes only (kernel socket "
            "memory is not counted); 'server conns held' are the proxy→backend connections still "
            "open while the clients idle."]
    return out, [("f memory", v)]


def report_g():
    out = ["| contender | nbthread | req/s | CPU µs/req | proxy CPU % | wrk+backend CPU % | machine busy % | p99.9 ms |",
           "|---|---|---|---|---|---|---|---|"]
    summary = []
    for c in contenders_of("g"):
        for pt in ("t1", "t2"):
            rs = rows("g", pt, c)
            if not rs:
                continue
            cb = statistics.median([(r["client_cpu_s"] + r["backend_cpu_s"]) / r["duration_s"] * 100 for r in rs])
            out.append(f"| {c} | {pt[1]} | {cell(rs, 'rps', 0)} | {cell(rs, 'cpu_us_per_req')} | "
                       f"{fmt(med(rs, 'proxy_util_pct'), 0)} | {cb:.0f} | {fmt(med(rs, 'machine_busy_pct'), 0)} | "
                       f"{fmt_ms(med(rs, 'p999_us'))} |")
    out += ["", f"Placement: nbthread 1 on CPU {A.proxy_cpus}; nbthread 2 on all CPUs, sharing one with wrk and "
            f"the backend (CPU {A.load_cpus}). With {NCPU} CPUs the second proxy thread competes with the load "
            "generator: the load generator and backend, not the proxy, set the ceiling, so this measures "
            "the cost of the second thread more than its gain. Machine busy % counts every process.", ""]
    for c in contenders_of("g"):
        t1, t2 = rows("g", "t1", c), rows("g", "t2", c)
        if not t1 or not t2:
            continue
        sc = ratio(med(t2, "rps"), med(t1, "rps"))
        busy = med(t2, "machine_busy_pct") or 0
        v = verdict([("scaling", sc >= 1.6)]) if sc is not None else "n/a"
        if sc is not None and sc < 1.6 and (busy >= 90 or NCPU <= 2):
            v = f"n/a: not measurable on {NCPU} CPUs (machine {busy:.0f}% busy; the load generator is the limit)"
        out.append(f"- {c}: nbthread 2 / nbthread 1 = {fr(sc)} req/s, CPU/req {fr(ratio(med(t2, 'cpu_us_per_req'), med(t1, 'cpu_us_per_req')))} → {v}")
        if c == "fulcrum":
            summary.append(("g threads", v))
    return out, summary


def plot():
    if not shutil.which("gnuplot"):
        say("   gnuplot missing: no plots")
        return
    colors = {"fulcrum": "#d62728", "haproxy": "#1f77b4", "nginx": "#2ca02c", "direct": "#7f7f7f"}
    if points_of("a"):
        dat = os.path.join(A.out, "a.dat")
        with open(dat, "w") as f:
            for c in contenders_of("a"):
                f.write(f"# {c}\n")
                for pt in points_of("a"):
                    if not pt[1:].isdigit():
                        continue  # c50-paced: not a point of the connection sweep
                    rs = rows("a", pt, c)
                    lo, hi = spread(rs, "rps")
                    clo, chi = spread(rs, "cpu_us_per_req")
                    f.write(f"{pt[1:]} {med(rs, 'rps')} {lo} {hi} {med(rs, 'cpu_us_per_req') or 'NaN'} "
                            f"{clo or 'NaN'} {chi or 'NaN'} {(med(rs, 'p999_us') or 0) / 1000}\n")
                f.write("\n\n")
        cs = contenders_of("a")
        idx = {c: i for i, c in enumerate(cs)}
        def series(col, lo, hi, only=None):
            return ", ".join(f"'{dat}' index {idx[c]} using 1:{col}:{lo}:{hi} with yerrorlines lw 2 pt 7 lc rgb '{colors[c]}' title '{c}'"
                             for c in cs if only is None or c in only)
        gp = f"""set terminal pngcairo noenhanced size 1500,500 font 'Sans,10'
set output '{A.out}/a-connections.png'
set multiplot layout 1,3 title 'a: keep-alive, empty body (median, bars = min-max over rounds)'
set logscale x; set xtics (50, 500, 5000); set xlabel 'concurrent connections'; set grid; set key top left
set ylabel 'requests/s'; set yrange [0:*]
plot {series(2, 3, 4)}
set ylabel 'proxy CPU µs per request'
plot {series(5, 6, 7, [c for c in cs if c != 'direct'])}
set ylabel 'p99.9 latency (ms)'; set logscale y; set yrange [*:*]
plot {", ".join(f"'{dat}' index {idx[c]} using 1:8 with linespoints lw 2 pt 7 lc rgb '{colors[c]}' title '{c}'" for c in cs)}
unset multiplot
"""
        subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True)
    if points_of("e"):
        dat = os.path.join(A.out, "e.dat")
        cs = contenders_of("e")
        with open(dat, "w") as f:
            for c in cs:
                f.write(f"# {c}\n")
                for i, pt in enumerate(points_of("e")):
                    rs = rows("e", pt, c)
                    lo, hi = spread(rs, "cpu_us_per_req")
                    f.write(f"{i} {med(rs, 'cpu_us_per_req')} {lo} {hi} \"{pt}\"\n")
                f.write("\n\n")
        labels = ", ".join(f"'{p[1:] if p.startswith('r') else 'map 10k'}' {i}" for i, p in enumerate(points_of("e")))
        plots = ", ".join(
            f"'{dat}' index {i} every ::0::3 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '{colors[c]}' title '{c}', "
            f"'{dat}' index {i} every ::4::4 using 1:2:3:4 with yerrorbars pt 5 ps 1.5 lc rgb '{colors[c]}' notitle"
            for i, c in enumerate(cs))
        gp = f"""set terminal pngcairo noenhanced size 800,500 font 'Sans,10'
set output '{A.out}/e-rules.png'
set title 'e: rule cost, request matching the last rule (median, bars = min-max)'
set xtics ({labels}); set xrange [-0.3:{len(points_of('e')) - 0.7}]
set xlabel 'acl + use_backend lines (square: one map_beg lookup over 10,000 entries)'; set ylabel 'proxy CPU µs per request'; set yrange [0:*]; set grid; set key top left
plot {plots}
"""
        subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True)


def write_report(env, t_start):
    L = [f"# Fulcrum benchmarks: results", "",
         f"Run {env['date']} ({'quick' if A.quick else 'full'}: {A.rounds} round(s) of {A.duration} s per point, "
         f"warm-up {A.warmup} s; wall time {time.time() - t_start:.0f} s). Fulcrum {env['fulcrum_commit']}.", "",
         f"Machine: {env['cpu']}, {NCPU} CPUs, kernel {env['kernel']}; {env['versions']}.", "",
         f"Placement: proxy on CPU {A.proxy_cpus}; wrk, h2load and the backend (`fulcrum testserver -t 1`) on "
         f"CPU {A.load_cpus}. Load average at start {env['load_start']}, at end {env['load_end']}.", ""]
    other = [r["other_load_pct"] for r in ROWS if r.get("other_load_pct") is not None]
    if other:
        q = statistics.median(other)
        busy_runs = sum(1 for o in other if o >= 15)
        if q < 5 and busy_runs == 0:
            word = "**quiet**"
        elif q < 5 and busy_runs <= len(other) // 10:
            word = (f"**mostly quiet**: {busy_runs} of {len(other)} runs had 15% or more (column 'other load %'); "
                    "CPU µs/req (the proxy's own time) is the figure that survives it")
        else:
            word = "**noisy**: trust CPU µs/req (the proxy's own time) more than req/s and latency"
        L.append(f"Other load on the machine during the measured runs (CPU not used by the proxy, wrk or the backends): "
                 f"median {q:.0f}%, max {max(other):.0f}% of {NCPU} CPUs → {word}.")
        L.append("")
    L += ["\"Not proxy-bound\" after a verdict: neither proxy used 85% of its CPU, so req/s or Gbit/s was set by "
          "the load generator and backend on the other CPU (or by other load), not by the proxy; the CPU per "
          "request or per byte is then the figure that compares the proxies. \"Load side µs/MB\" is the CPU "
          "that wrk and the backend spent per MB: what the proxy's way of reading and writing costs its peers.", ""]
    L += ["Figures: median over rounds, (min–max) spread. CPU µs/req = the proxy's utime+stime over requests served "
          "(all its processes). F = Fulcrum, H = HAProxy, N = nginx. ⚠ marks runs with socket errors or responses "
          "with status > 399 (the figure is suspect).", ""]
    summary = []
    titles = {"a": "a. HTTP keep-alive, empty body, 50 / 500 / 5000 connections",
              "b": "b. A new client connection per request (Connection: close), empty body, 50 connections "
                   "(close: the shared config, http-reuse safe; close-always: with http-reuse always)",
              "c": "c. Large responses, 50 connections, keep-alive",
              "d": "d. mode tcp bulk transfer: 1 MB HTTP responses through `mode tcp` (nginx: `stream`), 50 connections",
              "e": "e. Rule cost (Fulcrum and HAProxy), 50 connections",
              "f": f"f. {A.idle} idle keep-alive client connections",
              "g": "g. Threads: nbthread 1 vs 2, 500 connections"}
    for s in "abcdefg":
        if not points_of(s):
            continue
        L += [f"## {titles[s]}", ""]
        so = [r["other_load_pct"] for r in ROWS if r["scenario"] == s and r.get("other_load_pct") is not None]
        if so:
            L += [f"Other load during this scenario: median {statistics.median(so):.0f}%, max {max(so):.0f}% "
                  f"({'quiet' if max(so) < 15 else 'noisy'}).", ""]
        if s in "abcd":
            L += load_table(s, bytes_too=s in "cd")
            t, sm = report_ratio_table(s)
            L += t
        elif s == "e":
            L += load_table(s)
            L.append("")
            t, sm = report_e()
            L += t
            L += ["", "![e](e-rules.png)"]
        elif s == "f":
            t, sm = report_f()
            L += t
        else:
            t, sm = report_g()
            L += t
        if s == "a":
            L += ["", "![a](a-connections.png)"]
        summary += sm
        L.append("")
    L += ["## Targets (issue 4, section 3)", "", "| scenario | verdict |", "|---|---|"]
    L += [f"| {k} | {v} |" for k, v in summary]
    with open(os.path.join(A.out, "results.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.join(A.out, "env.json"), "w") as f:
        json.dump(env, f, indent=1)


def sh(cmd):
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10)
        return (r.stdout + r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def environment():
    cpu = re.search(r"Model name:\s*(.*)", sh("lscpu"))
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu.group(1).strip() if cpu else "?",
        "kernel": sh("uname -r"),
        "versions": "; ".join([
            sh("haproxy -v | head -1").replace("HAProxy version ", "HAProxy ").split(" - ")[0],
            sh("nginx -v").replace("nginx version: ", ""),
            sh("wrk -v | head -1").split(" [")[0],
            "h2load " + sh("h2load --version | head -1").split()[-1],
        ]),
        "fulcrum_commit": A.label or sh(f"git -C {ROOT} describe --always --dirty"),
        "load_start": sh("cut -d' ' -f1-3 /proc/loadavg"),
    }


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 200000
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft


def main():
    global A, LOG
    ap = argparse.ArgumentParser(description="Fulcrum vs HAProxy vs nginx (issue 4). Use bench/run.")
    ap.add_argument("--bin", required=True, help="the fulcrum binary")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="abcdefg", help="scenarios, e.g. a,c or ac")
    ap.add_argument("--out", default=None)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--duration", type=int, help="seconds per measured run")
    ap.add_argument("--warmup", type=float, help="seconds of warm-up per contender and point")
    ap.add_argument("--idle", type=int, default=10000, help="idle connections in f")
    ap.add_argument("--port-base", type=int, default=int(os.environ.get("BENCH_PORT_BASE", 24100)))
    ap.add_argument("--proxy-cpus", default="0")
    ap.add_argument("--load-cpus", default="1")
    ap.add_argument("--label", default=None, help="how the report names the Fulcrum build")
    ap.add_argument("--report", metavar="DIR", help="only rewrite DIR/results.md and plots from DIR/raw.csv")
    A = ap.parse_args()
    A.rounds = A.rounds or (1 if A.quick else 3)
    A.duration = A.duration or (1 if A.quick else 4)
    A.warmup = A.warmup if A.warmup is not None else (0.5 if A.quick else 1.5)
    A.idle_rounds = 1 if A.quick else 2
    A.only = [c for c in A.only.lower() if c in SCENARIOS]
    if A.report:
        return rewrite_report(A.report)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    A.out = os.path.abspath(A.out or os.path.join(ROOT, "bench", "results", stamp))
    A.cfgdir = os.path.join(A.out, "cfg")
    os.makedirs(os.path.join(A.out, "logs"), exist_ok=True)
    os.makedirs(A.cfgdir, exist_ok=True)
    if os.path.exists(os.path.join(A.out, "raw.csv")):
        os.remove(os.path.join(A.out, "raw.csv"))
    LOG = open(os.path.join(A.out, "run.log"), "w")
    nofile = A.nofile = raise_nofile()
    # HAProxy and Fulcrum need about 2 x maxconn file descriptors
    A.maxconn = max(1000, min(30000, (nofile - 200) // 2))
    if A.idle > A.maxconn - 500:
        A.idle_asked, A.idle = A.idle, (A.maxconn - 500) // 1000 * 1000
        say(f"note: open files limited to {nofile} (maxconn {A.maxconn}): f opens {A.idle} idle connections, "
            f"not {A.idle_asked}")

    def on_signal(sig, frame):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    t_start = time.time()
    env = environment()
    say(f"bench: {'quick' if A.quick else 'full'} run of {''.join(A.only)}, {A.rounds} round(s) x {A.duration} s, "
        f"out {A.out}")
    say(f"       {env['cpu']}, kernel {env['kernel']}; {env['versions']}; load {env['load_start']}")
    status = 0
    try:
        for n in CONTENDERS:
            for port in (be_port(n), fe_port(n)):
                if not port_free(port):
                    raise RuntimeError(f"port {port} is taken: choose another --port-base")
        start_backends()
        for s in A.only:
            try:
                SCENARIOS[s]()
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                status = 1
                say(f"!! scenario {s} failed: {e}")
                cleanup_except_backend()
    finally:
        cleanup()
        env["load_end"] = sh("cut -d' ' -f1-3 /proc/loadavg")
        if ROWS:
            plot()
            write_report(env, t_start)
            say(f"bench: done in {time.time() - t_start:.0f} s: {A.out}/results.md, raw.csv, *.png")
    return status


def rewrite_report(d):
    """Re-renders results.md and the plots of an earlier run from its raw.csv and env.json."""
    global LOG
    A.out = os.path.abspath(d)
    with open(os.path.join(A.out, "env.json")) as f:
        env = json.load(f)
    with open(os.path.join(A.out, "raw.csv")) as f:
        for r in csv.DictReader(f):
            for k, v in r.items():
                if k in ("scenario", "point", "contender", "error_detail", "note"):
                    continue
                r[k] = None if v in ("", "None") else float(v)
            ROWS.append(r)
    m = re.search(r"\((quick|full): (\d+) round\(s\) of (\d+) s per point, warm-up ([\d.]+) s; wall time (\d+) s\)",
                  open(os.path.join(A.out, "results.md")).read())
    if m:
        A.quick, A.rounds, A.duration, A.warmup = m.group(1) == "quick", int(m.group(2)), int(m.group(3)), float(m.group(4))
        wall = int(m.group(5))
    else:
        wall = 0
    A.idle = int(max((r.get("idle_conns") or 0) for r in ROWS) or A.idle)
    plot()
    write_report(env, time.time() - wall)
    print(f"rewrote {A.out}/results.md")
    return 0


def cleanup_except_backend():
    for p in list(reversed(PROCS)):
        if p not in BACKENDS.values():
            stop(p)

if __name__ == "__main__":
    sys.exit(main())
