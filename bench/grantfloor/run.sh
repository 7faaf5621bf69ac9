#!/usr/bin/env bash
# The floor of a granted exec (issue 14): bash running gx 1,000 times (no
# rule names it), gh 1,000 times under the real launcher (a rule grants
# GITHUB_TOKEN, the launcher starts each one), and gh 1,000 times with the
# shim's socket served by grantfloor-server (server.c: no decision,
# posix_spawn, pidfd, the same wire answers), interleaved by bench/timeit;
# then the bare round trip without bash or the shim (loop.c).
# Not part of `make test` or CI. README.md says what it measures.
# Usage: bash bench/grantfloor/run.sh [RUNS]   (timeit runs of each loop; 11)
set -euo pipefail
runs=${1:-11}
. "$(dirname "$0")/setup.sh"
go build -o bin/timeit ./bench/timeit
cc -std=c11 -O2 -Wall -Wextra -Werror -Wno-unused-function -I shim/libenvsieve -o "$tmp/grantfloor-loop" bench/grantfloor/loop.c
# A second server that declines every request at once: the stand-in then
# execs gh itself, as for gx. What that adds is the request's half of the
# trip.
start_server sockd -decline

# All four run bash through env, so that the last two can point the shim at
# the C server (the shim reads ENVSIEVE_SHIM_SOCK when bash loads it) and
# the four trees are the same shape.
run="bin/envsieve run --policy bench/shim/rules.yaml --"
gx="$run env bash $tmp/gx.sh"
gh="$run env bash $tmp/gh.sh"
ghc="$run env ENVSIEVE_SHIM_SOCK=$csock bash $tmp/gh.sh"
ghd="$run env ENVSIEVE_SHIM_SOCK=$tmp/sockd/s bash $tmp/gh.sh"

# A check that the C server's round trip works: a granted program's exit
# status comes back through the stand-in.
printf '#!/bin/sh\nexit 7\n' > "$tmp/bin/gh7"
chmod +x "$tmp/bin/gh7"
printf 'version: 1\nrules:\n  - name: gh\n    match: {command: "gh*"}\n    allow: [GITHUB_TOKEN]\n' > "$tmp/check.yaml"
got=$(bin/envsieve run --policy "$tmp/check.yaml" -- env ENVSIEVE_SHIM_SOCK="$csock" bash -c 'gh7; echo $?; true')
[ "$got" = 7 ] || { echo "the C server's round trip failed: got '$got', want 7" >&2; exit 1; }

echo "# $(go version), $(nproc) cores, $(uname -r); $runs timeit runs of each 1,000-exec loop, interleaved"
echo "# 1: gx, no rule names it (real launcher); 2: gh, granted, real launcher (Go);"
echo "# 3: gh, granted, the socket served by grantfloor-server (C: no decision, posix_spawn)"
echo "# 4: gh, the socket served by grantfloor-server -decline (the stand-in execs gh itself)"
bin/timeit -n "$runs" -warmup 2 "$gx" "$gh" "$ghc" "$ghd" | tee "$tmp/out"
stop_servers
cat "$tmp/sock.log" "$tmp/sockd.log"

us() { awk -v r="$1" 'NR==r {print $NF}' "$tmp/out" | tr -d 'µs'; }
med() { awk -v r="$1" 'NR==r {print $(NF-4)}' "$tmp/out" | tr -d 'µs'; }
go_added=$(( $(us 3) / 1000 ))
c_added=$(( $(us 4) / 1000 ))
d_added=$(( $(us 5) / 1000 ))
echo
echo "added per exec against gx ($(( $(med 2) / 1000 )) µs per gx exec, shim and rules on):"
echo "  gh, real launcher (Go):     $go_added µs"
echo "  gh, C server (the floor):   $c_added µs"
echo "  Go launcher over the floor: $(( go_added - c_added )) µs"
echo "  gh, C server declining (the request's half): $d_added µs"
awk -v g="$go_added" -v c="$c_added" 'BEGIN {
  if (g > 0) printf "  the floor is %.0f%% of the Go launcher'"'"'s added time; the target is 300 µs\n", 100 * c / g }'

# 2. The same round trip with neither bash nor the shim's checks: a small C
# parent forks a child that execs gx, or makes the shim's own start request
# (start.h) to a second C server and stands in, or posix_spawns gx itself;
# on both cores, then with everything on one (taskset -c 0).
echo
echo "## The bare round trip: 1,000 of each, interleaved, no bash, no shim loaded"
for cpus in "0-$(( $(nproc) - 1 ))" 0; do
  start_server "sock2-$cpus" taskset "$cpus" "PATH=/usr/bin:/bin"
  echo "# taskset -c $cpus"
  taskset -c "$cpus" "$tmp/grantfloor-loop" 1000 "$tmp/sock2-$cpus/s" "$tmp/bin/gx"
  stop_servers
done
