#!/usr/bin/env bash
# Side by side, in one run: what envsieve adds to starting a process, against
# the tool a user would otherwise reach for (env -i with PATH kept), and
# against two floors: a Go program that only execs (the Go runtime's start),
# and the same program with envsieve's libraries linked in (their package
# initialisers run at every start).
# Usage: bash bench/compare.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000}
make -s build
go build -o bin/timeit ./bench/timeit
CGO_ENABLED=0 go build -o bin/floor-exec ./bench/floor/exec
CGO_ENABLED=0 go build -o bin/floor-libs ./bench/floor/libs
echo "# $(go version), $(nproc) cores, $runs runs each, interleaved"
echo "# parent environment: $(env | wc -l) variables"
bin/timeit -n "$runs" \
  "/usr/bin/env -i PATH=$PATH /bin/true" \
  "bin/floor-exec /bin/true" \
  "bin/floor-libs /bin/true" \
  "bin/envsieve run --no-shim -- /bin/true" \
  "bin/envsieve run --no-shim --profile claude -- /bin/true" \
  "bin/envsieve run -- /bin/true" \
  "bin/envsieve run --profile claude -- /bin/true"
# An agent's tool call: envsieve as its SHELL, against the shell alone.
bin/timeit -n "$runs" \
  "/bin/sh -c true" \
  "bin/envsieve sh -c true"
# Where the shim's socket directory lives: /dev/shm, the default when
# XDG_RUNTIME_DIR is unset, against /tmp (both through env, to compare alike).
bin/timeit -n "$runs" \
  "/usr/bin/env bin/envsieve run -- /bin/true" \
  "/usr/bin/env XDG_RUNTIME_DIR=/tmp bin/envsieve run -- /bin/true"
