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
cc -O2 -o bin/nouserns internal/shimtest/testdata/nouserns.c
cc -O2 -o bin/usernsoff internal/shimtest/testdata/usernsoff.c
cc -O2 -o bin/llfloor bench/floor/landlock.c
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
# The seal, by each mechanism, against the same launch unsealed: namespaces
# (this machine allows them), and Landlock two ways: under bin/usernsoff,
# where the kernel's switch reads 0 (as Ubuntu 24.04's AppArmor refuses
# them), so that the launcher chooses Landlock before it starts anything
# and execs envsieve-init's Landlock init in its place; and under
# bin/nouserns, a seccomp filter that refuses user namespaces as a
# container's does (the launcher tries them, is refused, and seals with
# Landlock, resident, with envsieve-init as the tree's reaper, or envsieve
# re-executed where no envsieve-init is installed: through env, so compare
# it with the env row).
# The namespaces' init is envsieve-init (C) beside the shim, exec'd in the
# launcher's place without the shim (it makes the namespaces itself), started
# by the resident launcher with it; the Go init,
# envsieve re-executed, is reached through a shim with no envsieve-init
# beside it (through env, so compare it with the env row).
goinit=$(mktemp -d); trap 'rm -rf "$goinit"' EXIT
cp bin/libenvsieve.so "$goinit/"
bin/timeit -n "$runs" \
  "bin/envsieve run --no-shim -- /bin/true" \
  "bin/envsieve run --no-shim --seal -- /bin/true" \
  "/usr/bin/env bin/envsieve run --no-shim -- /bin/true" \
  "/usr/bin/env ENVSIEVE_SHIM=$goinit/libenvsieve.so bin/envsieve run --no-shim --seal -- /bin/true" \
  "bin/envsieve run -- /bin/true" \
  "bin/envsieve run --seal -- /bin/true" \
  "bin/usernsoff $(id -u) bin/envsieve run --no-shim -- /bin/true" \
  "bin/usernsoff $(id -u) bin/envsieve run --no-shim --seal -- /bin/true" \
  "bin/nouserns bin/envsieve run --no-shim -- /bin/true" \
  "bin/nouserns bin/envsieve run --no-shim --seal -- /bin/true" \
  "/usr/bin/env bin/nouserns bin/envsieve run --no-shim --seal -- /bin/true" \
  "/usr/bin/env ENVSIEVE_SHIM=$goinit/libenvsieve.so bin/nouserns bin/envsieve run --no-shim --seal -- /bin/true"
# The namespace seal apart from the launcher: envsieve-init alone, making
# the namespaces and exec'ing the program with no seal (what any namespace
# seal pays here: the floor), and with the spec this HOME's sealed launch
# hands it (the seal's own plan, mask layer and mounts). The spec is taken
# from a launch whose envsieve-init is a stand-in that writes it down.
spec=$(mktemp -d); trap 'rm -rf "$goinit" "$spec"' EXIT
cp bin/envsieve bin/libenvsieve.so "$spec/" # the init is found beside the shim
cat > "$spec/envsieve-init" <<'INIT'
#!/bin/sh
printf %s "$ENVSIEVE_INIT_SEAL" > "${0%/*}/spec"
INIT
chmod +x "$spec/envsieve-init"
"$spec/envsieve" run --no-shim --seal -- /bin/true
[ -s "$spec/spec" ] || { echo "no seal spec was written" >&2; exit 1; }
echo "# the seal's spec: $(grep -c '^m ' "$spec/spec") masks, $(grep -c '^h ' "$spec/spec") held directories"
# Beside it, bubblewrap (what Claude Code's and Codex's sandboxes run on
# Linux) making the same namespaces with the masks it can make: an empty
# tmpfs on each masked directory and /dev/null on each masked file that
# exists (it cannot hide a path that does not exist, nor hold a mask while
# the user works), the system read-only and the write places bound.
bwrap=(bwrap --unshare-user --unshare-pid --die-with-parent --ro-bind / / --dev-bind /dev /dev --proc /proc)
mounts=0
while read -r kind path; do
  case "$kind" in
  w) if [ -d "$path" ]; then bwrap+=(--bind "$path" "$path"); mounts=$((mounts + 1)); fi ;;
  m) if [ -d "$path" ]; then bwrap+=(--tmpfs "$path" --remount-ro "$path"); mounts=$((mounts + 1))
     elif [ -e "$path" ]; then bwrap+=(--ro-bind /dev/null "$path"); mounts=$((mounts + 1)); fi ;;
  esac
done < "$spec/spec"
"${bwrap[@]}" /bin/true || { echo "bwrap cannot run here" >&2; exit 1; }
echo "# bwrap: $mounts masks and write places mounted"
ENVSIEVE_INIT_SEAL=$(cat "$spec/spec") bin/timeit -n "$runs" \
  "/usr/bin/env -u ENVSIEVE_INIT_SEAL /bin/true" \
  "/usr/bin/env -u ENVSIEVE_INIT_SEAL bin/envsieve-init --unshare - /bin/true true" \
  "/usr/bin/env bin/envsieve-init --unshare - /bin/true true" \
  "/usr/bin/env -u ENVSIEVE_INIT_SEAL ${bwrap[*]} /bin/true"
# The Landlock seal apart from the launcher: envsieve-init --landlock handed
# an empty ruleset by bench/floor/landlock.c (the init's exec, the reaper's
# and the program's forks, the domain entered, both exits: what any Landlock
# seal that ends its tree pays here), against the same harness exec'ing the
# program; then the ruleset built as the launcher builds it, for a HOME of
# 100 entries and the usual credential files (BenchmarkLandlockPlan).
bin/timeit -n "$runs" \
  "bin/llfloor - /bin/true" \
  "bin/llfloor bin/envsieve-init /bin/true"
go test ./seal -run '^$' -bench LandlockPlan -benchtime "${runs}x" | grep '^Benchmark'
