#!/usr/bin/env bash
# What the shim costs one fork+exec of a program that reads nothing:
# forkexec (a C parent) runs /bin/true N times, with no preload, with an
# empty preloaded library (what any LD_PRELOAD costs) and with the shim
# and a launch's variables (taken from envsieve run --policy
# bench/shim/rules.yaml -- env: every exec goes through the shim's exec
# wrapper in the forked child and its constructor in /bin/true). ROUNDS
# interleaved rounds of perf stat -e page-faults,task-clock; per exec:
# page faults (median) and CPU (min, p25 and median over the rounds: on a
# loaded machine the low end is the cost, the median the weather).
# OLD=path/to/libenvsieve.so adds an older build of the shim to compare.
# Usage: bash bench/shim/perexec.sh [ROUNDS] [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-25} n=${2:-200}
make -s build
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/forkexec" bench/shim/forkexec.c
echo 'void envsieve_bench_empty(void) {}' > "$tmp/empty.c"
cc -O2 -fPIC -shared -o "$tmp/empty.so" "$tmp/empty.c"
# The launch's own variables (the socket is gone once it ends: /bin/true
# reads nothing, so nothing is sent), and a plain environment beside them.
mapfile -t launch < <(bin/envsieve run --policy bench/shim/rules.yaml -- env | grep -E '^(LD_PRELOAD|ENVSIEVE_SHIM_)')
base=(HOME="$HOME" LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin SHELL=/bin/bash TERM=xterm ENVSIEVE_TREE=1)
declare -A env=([a_none]="" [b_empty]="LD_PRELOAD=$tmp/empty.so" [c_shim]="${launch[*]}")
if [ -n "${OLD:-}" ]; then
  env[d_old]="${launch[*]/#LD_PRELOAD=*/LD_PRELOAD=$OLD}"
fi
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds of $n execs"
echo "# shim variables: ${launch[*]}"
for r in $(seq "$rounds"); do
  for k in "${!env[@]}"; do
    # shellcheck disable=SC2086 # the variables are words on purpose
    perf stat -x, -e page-faults,task-clock env -i "${base[@]}" ${env[$k]} "$tmp/forkexec" "$n" /bin/true 2>&1 >/dev/null |
      awk -F, -v k="$k" -v n="$n" '/page-faults/ {f = $1} /task-clock/ {t = $1} END {printf "%s %.2f %.1f\n", k, f / n, t * 1000 / n}'
  done
done | sort -k1,1 -k3,3n | awk '
{ k = $1; c[k]++; t[k, c[k]] = $3; f[k, c[k]] = $2 }
END {
  for (k in c) {
    n = c[k]
    # faults: the median of the rounds (sorted apart from the times)
    for (i = 1; i <= n; i++) g[i] = f[k, i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (g[j] < g[i]) { x = g[i]; g[i] = g[j]; g[j] = x }
    printf "%-8s %6.1f page faults, CPU min %4.0f p25 %4.0f median %4.0f us per exec\n", k, g[int((n + 1) / 2)], t[k, 1], t[k, int(n / 4) + 1], t[k, int((n + 1) / 2)]
  }
}' | sort
