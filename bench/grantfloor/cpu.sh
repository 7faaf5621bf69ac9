#!/usr/bin/env bash
# CPU, not wall time, of the three 1,000-exec loops of run.sh part 1 (gx; gh
# under the Go launcher; gh under grantfloor-server): perf stat's task-clock
# and context switches of each tree (bash, its stand-ins, the launcher and,
# under the Go launcher, the programs it starts), run one after the other
# RUNS times; then the C server's own CPU and its programs', which are not in
# the tree, for all its runs together. Needs perf. Not part of make test or CI.
# Usage: bash bench/grantfloor/cpu.sh [RUNS]   (5)
set -euo pipefail
n=${1:-5}
. "$(dirname "$0")/setup.sh"
run="bin/envsieve run --policy bench/shim/rules.yaml --"
echo "# loop, task-clock ms, context switches (perf stat of the tree)"
for _ in $(seq "$n"); do
  for c in gx gh ghc; do
    case $c in
      gx) cmd="$run env bash $tmp/gx.sh" ;;
      gh) cmd="$run env bash $tmp/gh.sh" ;;
      ghc) cmd="$run env ENVSIEVE_SHIM_SOCK=$csock bash $tmp/gh.sh" ;;
    esac
    perf stat -x, -e task-clock,context-switches $cmd 2>&1 >/dev/null |
      awk -F, -v c="$c" '$3 == "task-clock" {t = $1} $3 == "context-switches" {s = $1} END {printf "%-4s %8.0f %7d\n", c, t, s}'
  done
done
stop_servers
echo "# over all $n ghc runs:"
cat "$tmp/sock.log"
