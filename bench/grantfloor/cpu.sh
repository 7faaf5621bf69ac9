#!/usr/bin/env bash
# CPU, not wall time, of the three 1,000-exec loops of run.sh part 1 (gx; gh
# under the Go launcher; gh under grantfloor-server): perf stat's task-clock
# and context switches of each tree (bash, its stand-ins, the launcher and,
# under the Go launcher, the programs it starts), run one after the other
# RUNS times; then the C server's own CPU and its programs', which are not in
# the tree, for all its runs together. Needs perf. Not part of make test or CI.
# Usage: bash bench/grantfloor/cpu.sh [RUNS]   (5)
set -euo pipefail
if [ -z "${GRANTFLOOR_LOCKED:-}" ]; then
  exec env GRANTFLOOR_LOCKED=1 flock /tmp/envsieve-bench.lock bash "$0" "$@"
fi
cd "$(dirname "$0")/../.."
n=${1:-5}
make -s build
tmp=$(mktemp -d)
srv=
cleanup() {
  if [ -n "$srv" ]; then kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$tmp/grantfloor-server" bench/grantfloor/server.c
mkdir -p "$tmp/bin" "$tmp/sock"
chmod 700 "$tmp/sock"
cp /bin/true "$tmp/bin/gh"
cp /bin/true "$tmp/bin/gx"
printf 'for i in $(seq 1000); do %s; done\n' gh > "$tmp/gh.sh"
printf 'for i in $(seq 1000); do %s; done\n' gx > "$tmp/gx.sh"
export PATH="$tmp/bin:$PATH" GITHUB_TOKEN=bench-token-0123456789
csock=$tmp/sock/s
lib=$PWD/bin/libenvsieve.so
"$tmp/grantfloor-server" "$csock" \
  "ENVSIEVE_TREE=1" "GITHUB_TOKEN=$GITHUB_TOKEN" "HOME=${HOME:-/}" "LANG=C.UTF-8" "PATH=$PATH" \
  "SHELL=/bin/bash" "TERM=xterm" "LD_PRELOAD=$lib" "ENVSIEVE_SHIM_SOCK=$csock" "ENVSIEVE_SHIM_EXEC=1" \
  "ENVSIEVE_SHIM_START=$PWD/bin/envsieve-start" "ENVSIEVE_SHIM_RULES=gh" "ENVSIEVE_SHIM_GRANTED=GITHUB_TOKEN" \
  > "$tmp/ready" 2> "$tmp/server.log" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
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
kill "$srv"
wait "$srv" || true
srv=
echo "# over all $n ghc runs:"
cat "$tmp/server.log"
