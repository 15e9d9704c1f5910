#!/usr/bin/env bash
# bench/quick-tcp.sh: kept for habit; the harness is bench/run (see BENCHMARKS.md). This runs its
# quick `mode tcp` scenario (d) only: Fulcrum vs HAProxy vs nginx vs direct, proxy on CPU 0,
# client and backend on CPU 1. Extra arguments go to bench/run (e.g. --rounds 3 --duration 3).
exec "$(dirname "$0")/run" --quick --only d "$@"
