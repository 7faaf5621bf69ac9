# Sourced by run.sh and cpu.sh (with their arguments unchanged): what both
# loops need. The whole run (build and timings) holds the machine's bench
# lock: the script is run again under it. After it: the repository's root
# is the working directory; envsieve built; $tmp (removed at exit) with bin/gh and
# bin/gx (copies of /bin/true, first on PATH) and gh.sh, gx.sh (1,000
# execs each); GITHUB_TOKEN; $lib, the shim; $csock, served by
# grantfloor-server with the fixed environment the real launcher gives gh
# here. start_server starts another; stop_servers stops them all, and
# their rusage lines are in $tmp/*.log.
if [ -z "${GRANTFLOOR_LOCKED:-}" ]; then
  exec env GRANTFLOOR_LOCKED=1 flock /tmp/envsieve-bench.lock bash "$0" "$@"
fi
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
servers=()
tmp=$(mktemp -d)
stop_servers() {
  for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  servers=()
}
trap 'stop_servers; rm -rf "$tmp"' EXIT
make -s build
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$tmp/grantfloor-server" bench/grantfloor/server.c
mkdir -p "$tmp/bin"
cp /bin/true "$tmp/bin/gh"
cp /bin/true "$tmp/bin/gx"
printf 'for i in $(seq 1000); do %s; done\n' gh > "$tmp/gh.sh"
printf 'for i in $(seq 1000); do %s; done\n' gx > "$tmp/gx.sh"
export PATH="$tmp/bin:$PATH" GITHUB_TOKEN=bench-token-0123456789
lib=$PWD/bin/libenvsieve.so

# start_server NAME [taskset CPUS] [-decline] [ENV...]: a grantfloor-server
# on $tmp/NAME/s (a 0700 directory), logging to $tmp/NAME.log; it returns
# when the server listens.
start_server() {
  local name=$1 pre=()
  shift
  if [ "${1:-}" = taskset ]; then pre=(taskset -c "$2"); shift 2; fi
  mkdir -p "$tmp/$name"
  chmod 700 "$tmp/$name"
  local args=()
  if [ "${1:-}" = -decline ]; then args=(-decline); shift; fi
  "${pre[@]}" "$tmp/grantfloor-server" "${args[@]}" "$tmp/$name/s" "$@" > "$tmp/$name.ready" 2> "$tmp/$name.log" &
  servers+=($!)
  for _ in $(seq 100); do [ -s "$tmp/$name.ready" ] && return 0; sleep 0.05; done
  echo "grantfloor-server ($name) did not start" >&2
  cat "$tmp/$name.log" >&2
  exit 1
}

# The fixed environment the C server gives every program: what the real
# launcher gives gh here (the shim's variables, the grant, the few
# variables the policy passes), with the C server's socket.
csock=$tmp/sock/s
start_server sock \
  "ENVSIEVE_TREE=1" "GITHUB_TOKEN=$GITHUB_TOKEN" "HOME=${HOME:-/}" "LANG=C.UTF-8" "PATH=$PATH" \
  "SHELL=/bin/bash" "TERM=xterm" "LD_PRELOAD=$lib" "ENVSIEVE_SHIM_SOCK=$csock" "ENVSIEVE_SHIM_EXEC=1" \
  "ENVSIEVE_SHIM_START=$PWD/bin/envsieve-start" "ENVSIEVE_SHIM_RULES=gh" "ENVSIEVE_SHIM_GRANTED=GITHUB_TOKEN"
