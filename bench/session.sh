#!/usr/bin/env bash
# What an agent session costs under envsieve, side by side in one run, as an
# unprivileged user (setpriv to nobody), rounds interleaved (each variant once
# per round, in turn, each round starting one variant later) so that the
# machine's load hits every variant alike:
#   bare           the mix with no envsieve
#   claude         envsieve run --profile claude: the seal, the broker, the shim
#   launcher only  the same, --no-broker --no-shim and the seal off
#   no broker      --no-broker
#   no shim        --no-shim
#   no seal        the seal off (a profile that extends claude with seal: off)
# Two mixes of tool calls, each a fresh `bash -c` in a clone of this
# repository (bench/session/mix.sh): light (git status/log, grep -rn, ls,
# python3 -c, node -e, find | wc) and heavy (npm test of a small package,
# pip --version and list, go build, git commit, node -e). Then the starts of
# node, python3, curl and git in the tree against bare, with the claude
# profile (base-URL mode: no CA variable) and with a binding that needs
# proxy mode (GITHUB_TOKEN: the CA variables set), and the resident
# launcher's and the broker's memory (VmHWM, VmRSS) during a session.
#   bash bench/session.sh            # ROUNDS=3 LIGHT=10 (60 calls) HEAVY=1 (6 calls) STARTS=10
#   BEFORE=/path/to/bin bash bench/session.sh   # adds "claude, before" (and "proxy, before" to the
#                                               # starts): envsieve from another build
#   MIXES= bash bench/session.sh    # the starts and the memory only (MIXES="light heavy" by default)
# Takes about two minutes on an idle 2-core machine. The whole run holds the
# machine's bench lock.
set -euo pipefail
if [ -z "${SESSION_LOCKED:-}" ]; then
  exec env SESSION_LOCKED=1 flock /tmp/envsieve-bench.lock bash "$0" "$@"
fi
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3} light=${LIGHT:-10} heavy=${HEAVY:-1} starts=${STARTS:-10}
for c in setpriv node npm python3 git go curl; do
  command -v "$c" >/dev/null || { echo "session.sh: $c is needed" >&2; exit 1; }
done
make -s build
es=$PWD/bin/envsieve
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

# The tree's files, owned by the unprivileged user.
git clone -q --no-hardlinks "$PWD" "$tmp/repo"
mkdir -p "$tmp/home" "$tmp/pkg" "$tmp/gomod" "$tmp/scratch"
cp bench/session/mix.sh "$tmp/mix.sh"
printf '{"name": "bench-pkg", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}}\n' > "$tmp/pkg/package.json"
printf 'const assert = require("assert");\nassert.strictEqual([3, 1, 2].sort().join(), "1,2,3");\nconsole.log("ok");\n' > "$tmp/pkg/test.js"
printf 'module bench/hello\n\ngo %s\n' "$(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')" > "$tmp/gomod/go.mod"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' > "$tmp/gomod/main.go"
git -C "$tmp/scratch" init -q
git -C "$tmp/scratch" config user.name bench
git -C "$tmp/scratch" config user.email bench@envsieve.invalid
cat > "$tmp/policy.yaml" <<'YAML'
version: 1
mode: enforce
base: safe
groups: [proxy, tls]
profiles:
  claude-noseal:
    extends: [builtin:claude]
    seal: off
  claude-proxy:
    extends: [builtin:claude]
    brokered: [GITHUB_TOKEN]
    allow: [GITHUB_TOKEN]
YAML
chown -R 65534:65534 "$tmp"

# The user's environment: what an agent started from a terminal has. The
# key is a made-up one; its endpoint is never called.
key="sk-ant-api03-$(printf 'B3nch%.0s' $(seq 18))AA"
envv=(PATH="$(dirname "$(command -v go)"):/usr/local/bin:/usr/bin:/bin" HOME="$tmp/home" USER=nobody LOGNAME=nobody
  LANG=C.UTF-8 TERM=xterm SHELL=/bin/bash ANTHROPIC_API_KEY="$key" ANTHROPIC_BASE_URL=https://api.example.test
  GITHUB_TOKEN="ghp_$(printf 'B3nc%.0s' $(seq 9))")
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env -i "${envv[@]}" "$@"; }
pol=(--policy "$tmp/policy.yaml")
declare -A run=(
  [bare]=""
  [claude]="$es run ${pol[*]} --profile claude --"
  [launcher only]="$es run ${pol[*]} --profile claude-noseal --no-broker --no-shim --"
  [no broker]="$es run ${pol[*]} --profile claude --no-broker --"
  [no shim]="$es run ${pol[*]} --profile claude --no-shim --"
  [no seal]="$es run ${pol[*]} --profile claude-noseal --"
)
variants=(bare claude "launcher only" "no broker" "no shim" "no seal")
if [ -n "${BEFORE:-}" ]; then
  run[claude, before]="$BEFORE/envsieve run ${pol[*]} --profile claude --"
  variants+=("claude, before")
fi

# Warm the caches (go's build cache, npm, the page cache) once each.
as_user bash "$tmp/mix.sh" "$tmp" heavy 1 >/dev/null
as_user $es run "${pol[@]}" --profile claude -- bash "$tmp/mix.sh" "$tmp" light 1 >/dev/null

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "# $(go version | cut -d' ' -f3), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); node $(node --version), $(python3 --version)"
echo "# as uid 65534; $rounds rounds, interleaved; the time of the tool calls (wall clock, and the CPU"
echo "# time of the processes they started), the session's start not included"
for mix in ${MIXES-light heavy}; do
  n=$light
  [ $mix = heavy ] && n=$heavy
  declare -A wall=() cpu=()
  for r in $(seq "$rounds"); do
    for i in "${!variants[@]}"; do
      v=${variants[$(((i + r) % ${#variants[@]}))]}
      # shellcheck disable=SC2086 # the launcher's words
      read -r w c < <(as_user ${run[$v]} bash "$tmp/mix.sh" "$tmp" $mix "$n" 2>>"$tmp/stderr")
      wall[$v]+="$w " cpu[$v]+="$c "
    done
  done
  bw=$(echo "${wall[bare]}" | tr ' ' '\n' | grep . | median)
  bcpu=$(echo "${cpu[bare]}" | tr ' ' '\n' | grep . | median)
  echo
  echo "## $mix mix: $((n * 6)) tool calls (median of $rounds)"
  printf '%-16s %10s %8s %10s %8s\n' variant "wall ms" ratio "CPU ms" ratio
  for v in "${variants[@]}"; do
    w=$(echo "${wall[$v]}" | tr ' ' '\n' | grep . | median)
    c=$(echo "${cpu[$v]}" | tr ' ' '\n' | grep . | median)
    printf '%-16s %10.1f %7.2fx %10.1f %7.2fx\n' "$v" "$(echo "$w / 1000" | bc -l)" "$(echo "$w / $bw" | bc -l)" \
      "$(echo "$c / 1000" | bc -l)" "$(echo "$c / $bcpu" | bc -l)"
  done
done

echo
echo "## Starts in the tree: µs of CPU per start (the started processes' user + system), median of $rounds rounds of $starts"
echo "# claude: base-URL mode, no CA variable; proxy mode: claude + GITHUB_TOKEN brokered"
echo "# (the proxy and CA variables set; node gets the launch CA through --use-openssl-ca, SSL_CERT_FILE and SSL_CERT_DIR)"
declare -A st=()
svariants=(bare claude "proxy mode")
run[proxy mode]="$es run ${pol[*]} --profile claude-proxy --"
if [ -n "${BEFORE:-}" ]; then
  run[proxy, before]="$BEFORE/envsieve run ${pol[*]} --profile claude-proxy --"
  svariants+=("claude, before" "proxy, before")
fi
for r in $(seq "$rounds"); do
  for i in "${!svariants[@]}"; do
    v=${svariants[$(((i + r) % ${#svariants[@]}))]}
    # shellcheck disable=SC2086
    while IFS=$'\t' read -r name us; do st[$v|$name]+="$us "; done < <(as_user ${run[$v]} bash "$tmp/mix.sh" "$tmp" starts "$starts" 2>>"$tmp/stderr")
  done
done
printf '%-26s %9s %9s %7s %11s %7s' program bare claude ratio "proxy mode" ratio
[ -n "${BEFORE:-}" ] && printf ' %9s %7s %13s %7s' "claude, before" ratio "proxy, before" ratio
echo
for name in "node -e 0" "python3 -c pass" "python3 ssl context" "python3 urllib" "python3 requests (pip's)" "curl --version" "git --version"; do
  b=$(echo "${st[bare|$name]}" | tr ' ' '\n' | grep . | median)
  c=$(echo "${st[claude|$name]}" | tr ' ' '\n' | grep . | median)
  p=$(echo "${st[proxy mode|$name]}" | tr ' ' '\n' | grep . | median)
  printf '%-26s %9s %9s %6.2fx %11s %6.2fx' "$name" "$b" "$c" "$(echo "$c / $b" | bc -l)" "$p" "$(echo "$p / $b" | bc -l)"
  if [ -n "${BEFORE:-}" ]; then
    o=$(echo "${st[claude, before|$name]}" | tr ' ' '\n' | grep . | median)
    q=$(echo "${st[proxy, before|$name]}" | tr ' ' '\n' | grep . | median)
    printf ' %14s %6.2fx %13s %6.2fx' "$o" "$(echo "$o / $b" | bc -l)" "$q" "$(echo "$q / $b" | bc -l)"
  fi
  echo
done

echo
echo "## Memory of a session (claude profile, the light mix running)"
setpriv --reuid=65534 --regid=65534 --clear-groups env -i "${envv[@]}" \
  "$es" run "${pol[@]}" --profile claude -- bash -c "bash $tmp/mix.sh $tmp light 2 >/dev/null; sleep 1" &
launcher=$!
sleep 0.5
broker=""
for i in $(seq 50); do
  broker=$( (ps -o pid= -o args= --ppid "$launcher" || true) | awk '/__broker/ {print $1}')
  [ -n "$broker" ] && break
  sleep 0.1
done
peak() { awk '/^VmHWM/ {h = $2} /^VmRSS/ {r = $2} END {printf "VmHWM %d kB, VmRSS %d kB", h, r}' "/proc/$1/status"; }
hwm=0 l=? b=?
while [ -n "$broker" ] && kill -0 "$launcher" 2>/dev/null; do
  l2=$(peak "$launcher" 2>/dev/null) && b2=$(peak "$broker" 2>/dev/null) || break
  l=$l2 b=$b2
  hwm=$(($(echo "$l" | awk '{print $2}') + $(echo "$b" | awk '{print $2}')))
  sleep 0.2
done
wait "$launcher" || true
echo "resident launcher: $l"
echo "broker:            $b"
echo "together (VmHWM):  $((hwm / 1024)) MB"
