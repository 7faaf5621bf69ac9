#!/usr/bin/env bash
# Side by side, in one run: what the shim (libenvsieve.so) costs.
#  1. program start with the shim preloaded against without (/bin/true,
#     python3 -c pass), and envsieve run with the shim against --no-shim;
#  2. getenv with the shim against without: ns per call (wall clock) and
#     instructions per call (callgrind, when valgrind is installed);
#  3. exec-time grants: a bash loop of 1,000 /bin/true execs with
#     interception against without, and the time added per exec;
#  4. a granted exec (the launcher starts the program); 5. a pinned one;
#  6. a deny-only catch-all rule (applied in place); 7. a granted exec in
#     a sealed launch.
# Usage: bash bench/shim.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300}
make -s build
go build -o bin/timeit ./bench/timeit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/getenv" bench/shim/getenv.c
lib=$PWD/bin/libenvsieve.so
# The interpreter itself, not a wrapper script such as pyenv's shim.
py=$(python3 -c 'import sys; print(sys.executable)')

echo "# $(go version), $(nproc) cores, $runs runs each, interleaved"
echo
echo "## 1. Program start"
bin/timeit -n "$runs" \
  "/usr/bin/env /bin/true" \
  "/usr/bin/env LD_PRELOAD=$lib ENVSIEVE_SHIM_SOCK=$tmp/none /bin/true" \
  "/usr/bin/env $py -c pass" \
  "/usr/bin/env LD_PRELOAD=$lib ENVSIEVE_SHIM_SOCK=$tmp/none $py -c pass"
echo
bin/timeit -n "$runs" \
  "bin/envsieve run --no-shim -- /bin/true" \
  "bin/envsieve run -- /bin/true" \
  "bin/envsieve run --no-shim -- $py -c pass" \
  "bin/envsieve run -- $py -c pass"

echo
echo "## 2. getenv, 1,000,000 calls, in a 16-variable environment"
E=(PATH=/usr/bin:/bin HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM=xterm TMPDIR=/tmp
  XDG_RUNTIME_DIR=/run/user/0 XDG_CONFIG_HOME=/root/.config GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@y
  SSH_AUTH_SOCK=/tmp/a HTTP_PROXY=http://p:3128 NO_PROXY=localhost EDITOR=vi)
S=(LD_PRELOAD="$lib" ENVSIEVE_SHIM_SOCK="$tmp/none")
med() { printf '%s\n' "$@" | sort -n | sed -n 6p; }
for case in "HOME" "EDITOR" "NOT_SET" "HOME 1000000 runtime"; do
  without=() with=()
  for i in $(seq 11); do
    without+=("$(env -i "${E[@]}" "$tmp/getenv" $case)")
    with+=("$(env -i "${E[@]}" "${S[@]}" "$tmp/getenv" $case)")
  done
  printf 'getenv(%s): %s ns without, %s ns with the shim (median of 11)\n' "$case" "$(med "${without[@]}")" "$(med "${with[@]}")"
  if command -v valgrind >/dev/null; then
    ir() { env -i "${E[@]}" "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$tmp/getenv" $case 2>&1 | sed -n 's/.*Collected : //p'; }
    a=$(ir) b=$(ir "${S[@]}")
    printf '  instructions, whole program: %s without, %s with: +%s per call, +%s%%\n' "$a" "$b" "$(( (b - a) / 1000000 ))" "$(( (b - a) * 100 / a ))"
  fi
done
echo
echo "## 3. Exec-time grants: bash running 1,000 /bin/true"
cp bench/shim/loop.sh "$tmp/loop.sh"
bin/timeit -n 15 -warmup 2 \
  "bin/envsieve run --no-shim --policy bench/shim/rules.yaml -- bash $tmp/loop.sh" \
  "bin/envsieve run --policy bench/shim/rules.yaml -- bash $tmp/loop.sh" | tee "$tmp/grants"
added=$(awk 'NR==3 {print $NF}' "$tmp/grants" | tr -d 'µs')
echo "added per exec: $((added / 1000)) µs"
echo
echo "## 4. Exec-time grants that start a program: bash running gh 1,000 times"
echo "# gh is a copy of /bin/true; the rule grants GITHUB_TOKEN to it, so the"
echo "# launcher starts each one (bash's forked child stands in for it)."
mkdir -p "$tmp/bin"
cp /bin/true "$tmp/bin/gh"
cp /bin/true "$tmp/bin/gx"
printf 'for i in $(seq 1000); do %s; done\n' gh > "$tmp/gh.sh"
printf 'for i in $(seq 1000); do %s; done\n' gx > "$tmp/gx.sh"
PATH="$tmp/bin:$PATH" GITHUB_TOKEN=bench-token-0123456789 bin/timeit -n 11 -warmup 2 \
  "bin/envsieve run --policy bench/shim/rules.yaml -- bash $tmp/gx.sh" \
  "bin/envsieve run --policy bench/shim/rules.yaml -- bash $tmp/gh.sh" | tee "$tmp/start"
added=$(awk 'NR==3 {print $NF}' "$tmp/start" | tr -d 'µs')
echo "added per granted exec (gh, granted, against gx, which no rule names): $((added / 1000)) µs"
echo
echo "## 5. A pinned program: bash running pt 1,000 times"
echo "# pt is the same copy of /bin/true, named by a rule that pins its sha256"
echo "# (match: {path, sha256}): each start copies it into a sealed memory file,"
echo "# hashes the copy and runs it."
cp /bin/true "$tmp/bin/pt"
pt=$(readlink -f "$tmp/bin/pt")
sum=$(sha256sum "$pt" | cut -d' ' -f1)
printf 'version: 1\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n  - name: pt\n    match: {path: %s, sha256: %s}\n    allow: [GITHUB_TOKEN]\n' "$pt" "$sum" > "$tmp/pinned.yaml"
printf 'for i in $(seq 1000); do %s; done\n' pt > "$tmp/pt.sh"
PATH="$tmp/bin:$PATH" GITHUB_TOKEN=bench-token-0123456789 bin/timeit -n 11 -warmup 2 \
  "bin/envsieve run --policy $tmp/pinned.yaml -- bash $tmp/gh.sh" \
  "bin/envsieve run --policy $tmp/pinned.yaml -- bash $tmp/pt.sh" | tee "$tmp/pinned"
added=$(awk 'NR==3 {print $NF}' "$tmp/pinned" | tr -d 'µs')
echo "added per pinned exec (pt, against gh, granted by name): $((added / 1000)) µs"
echo
echo "## 6. A rule that only denies: bash running 1,000 /bin/true"
echo "# A catch-all rule (match: {command: \"*\"}) that only denies a key is"
echo "# applied by the shim in place (ENVSIEVE_SHIM_DROP): against the gh rule"
echo "# alone, which /bin/true does not match."
printf 'version: 1\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n  - name: everything\n    match: {command: "*"}\n    deny: [ANTHROPIC_API_KEY]\n' > "$tmp/catchall.yaml"
ANTHROPIC_API_KEY=bench-key-0123456789 bin/timeit -n 15 -warmup 2 \
  "bin/envsieve run --policy bench/shim/rules.yaml -- bash $tmp/loop.sh" \
  "bin/envsieve run --policy $tmp/catchall.yaml -- bash $tmp/loop.sh" | tee "$tmp/deny"
added=$(awk 'NR==3 {print $NF}' "$tmp/deny" | tr -d 'µs')
echo "added per exec by a deny-only catch-all: $((added / 1000)) µs"
echo
echo "## 7. A granted exec in a sealed launch: bash running gh 1,000 times"
echo "# Sealed, the launcher starts each gh from its sealed thread (a Landlock"
echo "# domain with the tree's rules): against the same launch unsealed."
PATH="$tmp/bin:$PATH" GITHUB_TOKEN=bench-token-0123456789 bin/timeit -n 11 -warmup 2 \
  "bin/envsieve run --policy bench/shim/rules.yaml -- bash $tmp/gh.sh" \
  "bin/envsieve run --seal --policy bench/shim/rules.yaml -- bash $tmp/gh.sh" | tee "$tmp/sealed"
added=$(awk 'NR==3 {print $NF}' "$tmp/sealed" | tr -d 'µs')
echo "added per granted exec by the seal: $((added / 1000)) µs (can be negative: the sealed launch's tree is in its own pid namespace)"
