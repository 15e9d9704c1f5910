#!/usr/bin/env bash
# Quick side-by-side: HTTP keep-alive through `mode tcp`, Fulcrum vs HAProxy, same config file,
# same backend (fulcrum testserver), proxy pinned to CPU 0, client and backend on CPU 1.
# Prints requests/s and the proxy's CPU microseconds per request. Bounded: ROUNDS x DURATION.
# The full harness (nginx, latency percentiles, sweeps) is issue 4's bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-5}; CONNS=${CONNS:-50}
command -v wrk >/dev/null && command -v haproxy >/dev/null || { echo "needs: apt-get install wrk haproxy" >&2; exit 1; }
cargo build --release -q
BIN=$PWD/target/release/fulcrum
TMP=$(mktemp -d)
taskset -c 1 "$BIN" testserver -L 127.0.0.1:19201 -n s1 -q > /dev/null & TS=$!
trap 'kill $TS 2>/dev/null; rm -rf "$TMP"' EXIT
cat > "$TMP/bench.cfg" <<CFG
global
    nbthread 1
    maxconn 5000
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
listen px
    bind 127.0.0.1:19200
    server s1 127.0.0.1:19201
CFG
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
run_one() { # name cmd...
    local name=$1; shift
    taskset -c 0 "$@" -f "$TMP/bench.cfg" & local pid=$!
    sleep 0.5
    taskset -c 1 wrk -t1 -c"$CONNS" -d1s http://127.0.0.1:19200/ > /dev/null # warm-up
    local t0; t0=$(ticks $pid)
    local out; out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${DURATION}s" http://127.0.0.1:19200/)
    local t1; t1=$(ticks $pid)
    kill $pid; wait $pid 2>/dev/null || true
    local reqs; reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    local rps; rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    local hz; hz=$(getconf CLK_TCK)
    echo "$name rps=$rps cpu_us_per_req=$(awk -v t=$((t1 - t0)) -v r="$reqs" -v hz="$hz" 'BEGIN {printf "%.2f", t * 1e6 / hz / r}')"
}
for r in $(seq "$ROUNDS"); do
    run_one fulcrum "$BIN" -db
    run_one haproxy haproxy -db
done
