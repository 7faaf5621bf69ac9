#!/usr/bin/env bash
# Daemon speed: the round trip of session/exec running /bin/true over a real
# unix socket (median and 99th percentile, one exec at a time), and execs per
# second with 50 concurrent clients. Both run the daemon in the benchmark's
# process; the client speaks the wire protocol over the socket.
#   bash bench/daemon.sh            # 2000 execs each
#   N=10000 bash bench/daemon.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
go test -run '^$' -bench '^BenchmarkDaemon' -benchtime "${N}x" -count "${COUNT:-3}" ./internal/daemon/
