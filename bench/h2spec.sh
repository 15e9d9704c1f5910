#!/usr/bin/env bash
# bench/h2spec.sh: HTTP/2 conformance of the proxy (issue 16 §3) with h2spec, on h2c
# (`bind ... proto h2`) and on TLS (`alpn h2`), through the proxy to a backend answering a body,
# Fulcrum and then HAProxy 2.6 (when installed) on the same configuration.
#
#   bench/h2spec.sh [path/to/fulcrum]
#   BACKEND=h2 bench/h2spec.sh     the backend is reached over HTTP/2 (`server ... proto h2`)
#
# h2spec is built from its public Go module the first time (needs Go; about a minute).
# Every process started here is stopped by PID; ports 127.0.0.1:24600..24611.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/fulcrum}
GOBIN_DIR=${H2SPEC_DIR:-/tmp/h2spec-bin}
H2SPEC="$GOBIN_DIR/h2spec"
if [ ! -x "$H2SPEC" ]; then
    mkdir -p "$GOBIN_DIR"
    GOBIN="$GOBIN_DIR" go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible >/dev/null 2>&1 \
        || GOBIN="$GOBIN_DIR" go install github.com/summerwind/h2spec/cmd/h2spec@latest
fi
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/k.pem" \
    -out "$TMP/c.pem" -days 1 -subj "/CN=localhost" 2>/dev/null
cat "$TMP/c.pem" "$TMP/k.pem" > "$TMP/site.pem"

PROTO=""
[ "${BACKEND:-h1}" = h2 ] && PROTO=" proto h2"
config() { # $1: first port of three
    cat <<EOF
defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
listen px
  bind 127.0.0.1:$1 proto h2
  bind 127.0.0.1:$(($1 + 1)) ssl crt $TMP/site.pem alpn h2,http/1.1
  server s1 127.0.0.1:$(($1 + 2))$PROTO
listen body
  bind 127.0.0.1:$(($1 + 2))$PROTO
  http-request return status 200 content-type text/plain string "hello world"
EOF
}

wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on port $1" >&2
    return 1
}

run() { # $1: name, $2: first port, then the command
    local name=$1 port=$2
    shift 2
    config "$port" > "$TMP/$name.cfg"
    "$@" -f "$TMP/$name.cfg" > "$TMP/$name.log" 2>&1 &
    PIDS+=($!)
    wait_port "$port"
    echo "$name h2c: $("$H2SPEC" -h 127.0.0.1 -p "$port" -o 3 2>&1 | tail -1)"
    echo "$name tls: $("$H2SPEC" -t -k -h 127.0.0.1 -p $((port + 1)) -o 3 2>&1 | tail -1)"
}

run fulcrum 24600 "$BIN"
if command -v haproxy >/dev/null 2>&1; then
    run haproxy 24610 haproxy -db
fi
