#!/usr/bin/env bash
# The one-launch refactor (issue 11) against the commit before it, in one
# run: sieve.Build and the daemon's round trip with benchstat over COUNT runs
# each, and `envsieve run -- /bin/true` of both builds side by side.
#   bash bench/layers.sh             # COUNT=10
#   BEFORE=<commit> bash bench/layers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
before=${BEFORE:-f6521af} # the parent of 07a5481, the launch package's first commit
refactored=${REFACTORED:-c8ea97a} # the last commit of issue 11's refactor, before the broker
count=${COUNT:-10}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/before" "$before"
benchstat() { go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$@"; }
echo "# $(go version), $(nproc) cores; before: $before, after: $(git rev-parse --short HEAD); $count runs each"
for side in before after; do
  dir=.
  [ "$side" = before ] && dir="$work/before"
  (cd "$dir" && go test -run '^$' -bench '^BenchmarkBuild$' -benchmem -count "$count" ./sieve/) > "$work/sieve-$side.txt"
  daemonpkg=./internal/daemon/ # ./daemon/ before it moved under internal/
  [ -d "$dir/internal/daemon" ] || daemonpkg=./daemon/
  (cd "$dir" && go test -run '^$' -bench '^BenchmarkDaemonExecTrue$' -benchtime 2000x -count "$count" "$daemonpkg") > "$work/daemon-$side.txt"
  (cd "$dir" && CGO_ENABLED=0 go build -o "$work/envsieve-$side" ./cmd/envsieve)
done
benchstat "$work/sieve-before.txt" "$work/sieve-after.txt"
benchstat "$work/daemon-before.txt" "$work/daemon-after.txt"
go build -o bin/timeit ./bench/timeit
git worktree add -q --detach "$work/refactored" "$refactored"
(cd "$work/refactored" && CGO_ENABLED=0 go build -o "$work/envsieve-refactored" ./cmd/envsieve)
git worktree remove --force "$work/refactored"
bin/timeit -n "${RUNS:-1000}" \
  "$work/envsieve-before run --no-shim -- /bin/true" \
  "$work/envsieve-refactored run --no-shim -- /bin/true" \
  "$work/envsieve-after run --no-shim -- /bin/true"
