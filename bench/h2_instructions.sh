#!/bin/bash
# bench/h2_instructions.sh BIN LABEL: callgrind instructions per request for HTTP/2 clients
# (h2load, one connection, 100 streams, 20,000 requests after 2,000 not counted) through BIN
# (one thread, `bind ... proto h2`) to an HTTP/1 `fulcrum testserver`. Ports 24410-24411;
# every process started is stopped by PID. Needs valgrind and h2load.
BIN=$1; LABEL=$2; D=$(mktemp -d /tmp/h2ir-XXXX)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cat > $D/p.cfg <<CFG
global
    nbthread 1
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:24410 proto h2
    default_backend be
backend be
    server s1 127.0.0.1:24411
CFG
"$ROOT"/target/release/fulcrum testserver -q -t 1 -L 127.0.0.1:24411 > /dev/null 2>&1 & TS=$!
valgrind --tool=callgrind --callgrind-out-file=$D/cg.out $BIN -db -f $D/p.cfg > $D/px.log 2>&1 & PX=$!
for i in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/24410) 2>/dev/null && break; sleep 0.2; done
h2load -n 2000 -c 1 -m 100 http://127.0.0.1:24410/ > /dev/null 2>&1
callgrind_control -z $PX > /dev/null 2>&1
h2load -n 20000 -c 1 -m 100 http://127.0.0.1:24410/ > $D/h2load.txt 2>&1
callgrind_control -d $PX > /dev/null 2>&1
sleep 1
kill $PX $TS; wait $PX 2>/dev/null
[ -n "$KEEP" ] && cp $D/cg.out* $KEEP/
IR=$(for f in $D/cg.out*; do grep -h "^summary:\|^totals:" $f | head -1; done | awk '{s+=$2} END{print s}')
OK=$(grep -o "[0-9]* succeeded" $D/h2load.txt | awk '{print $1}')
echo "$LABEL ir=$IR ok=$OK per_req=$((IR/OK))"
