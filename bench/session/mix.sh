# The tool calls of an agent session, each a fresh `bash -c` as an agent's
# shell tool runs it, in $1 (a clone of this repository). Prints the time
# they took, wall clock and CPU (user + system), in microseconds (the
# session's start not included).
#   bash mix.sh DIR light ROUNDS  # ROUNDS x 6 calls: git status/log, grep -rn, ls, python3 -c, node -e, find | wc
#   bash mix.sh DIR heavy ROUNDS  # ROUNDS x 6 calls: npm test, pip --version, pip list, go build, git commit, node -e
#   bash mix.sh DIR starts N      # N starts each of node, python3 (ssl, urllib), curl, git: CPU µs per start, one line each
set -eu
dir=$1 mix=$2 n=$3
cd "$dir/repo"
us() { local s=${EPOCHREALTIME/./} e; "$@"; e=${EPOCHREALTIME/./}; echo $((e - s)); }
# cpu prints the CPU time (user + system) of this shell's waited-for
# children so far, in microseconds (clock ticks of /proc/PID/stat).
cpu() { local f; read -ra f < /proc/$$/stat; echo $(((f[15] + f[16]) * 1000000 / $(getconf CLK_TCK))); }
# kids sets KIDS to the user + system time of this shell's waited-for
# children so far, in microseconds, from bash's `times` (to the
# millisecond), run in this shell (a subshell has no children of its own).
kids() {
  local f=$dir/times.$$ u s
  times > "$f"
  read -r u s < <(sed -n 2p "$f")
  rm -f "$f"
  KIDS=0
  for t in "$u" "$s"; do
    [[ $t =~ ^([0-9]+)m([0-9]+)\.([0-9]{3})s$ ]] || { echo "kids: $t" >&2; exit 1; }
    KIDS=$((KIDS + (10#${BASH_REMATCH[1]} * 60 + 10#${BASH_REMATCH[2]}) * 1000000 + 10#${BASH_REMATCH[3]} * 1000))
  done
}
# both prints the wall and the CPU time of a command, in microseconds.
both() { local c0 w; c0=$(cpu); w=$(us "$@"); echo "$w $(($(cpu) - c0))"; }
light() {
  for i in $(seq "$n"); do
    if [ $((i % 2)) = 0 ]; then bash -c 'git status --short | wc -l'; else bash -c 'git log --oneline -5'; fi
    bash -c 'grep -rn "func main" --include=*.go . | head -20'
    bash -c 'ls -la docs'
    bash -c 'python3 -c "import json, os; print(json.dumps(sorted(os.listdir(\".\"))[:3]))"'
    bash -c 'node -e "console.log(require(\"path\").join(\"a\", \"b\"))"'
    bash -c 'find . -name "*.go" | wc -l'
  done >/dev/null 2>&1
}
heavy() {
  for i in $(seq "$n"); do
    bash -c "cd $dir/pkg && npm test --silent"
    bash -c 'python3 -m pip --version'
    bash -c 'python3 -m pip list --disable-pip-version-check'
    bash -c "cd $dir/gomod && go build -o $dir/gomod/hello ."
    bash -c "cd $dir/scratch && echo $i >> f && git add f && git commit -qm 'tool call $i'"
    bash -c 'node -e "process.stdout.write(String(1 + 1))"'
  done >/dev/null 2>&1
}
starts() {
  loop() { for i in $(seq "$n"); do "$@"; done >/dev/null 2>&1; }
  # t prints the CPU time per start of the processes a loop started
  # (bash's `times`, to the millisecond over the whole loop): steadier
  # than the wall clock on a loaded machine.
  t() { local name=$1 c0; shift; kids; c0=$KIDS; loop "$@"; kids; printf '%s\t%s\n' "$name" "$(((KIDS - c0) / n))"; }
  t "node -e 0" node -e 0
  t "python3 -c pass" python3 -c pass
  t "python3 ssl context" python3 -c 'import ssl; ssl.create_default_context()'
  t "python3 urllib" python3 -c 'import urllib.request'
  t "python3 requests (pip's)" python3 -c 'import pip._vendor.requests as r; r.Session().merge_environment_settings("https://x.test/", {}, None, None, None)'
  t "curl --version" curl --version
  t "git --version" git --version
}
case $mix in
  light) both light ;;
  heavy) both heavy ;;
  starts) starts ;;
esac
