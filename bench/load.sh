#!/usr/bin/env bash
# The loads and faults of issue 31, each bounded in size and time, run as
# the tests that assert them, and printed as one table: what ran, whether
# it held, and the figures the test logged. Run as root (the tests run the
# tree as an unprivileged user and mount a small tmpfs).
#   churn      3,000 connections of the launch's own user through the broker
#              (200 at a time): refusals and latency (TestOwnUserChurnServed)
#   other uid  the same from another user: every one refused
#   half-open  2,500 half-open connections while a health client's requests
#              go through the broker (TestHalfOpenFlood)
#   new conn   a new connection's round trip at 50 and 200 clients, direct
#              and through the broker (BenchmarkNewConn)
#   full disk  the audit log on a full tmpfs before and during a launch of
#              51 granted execs, and /dev/full (TestAuditFailsClosed)
#   daemon disk  the same under a daemon session's command
#              (TestDaemonAuditFailsClosed)
#   SIGSTOP    the launcher stopped for 15 s during out=$(gh) execs, and while a granted
#              program runs
#              (TestStoppedLauncher, TestStoppedLauncherBegun)
#   SIGKILL    the launcher killed; what is left (TestKilledLauncher)
#   lifetime   a setsid double-forked watcher, by each mechanism
#              (TestNothingOutlivesTheLaunch)
# Usage: bash bench/load.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rows=(
  "churn|./internal/broker/|^TestOwnUserChurnServed$"
  "other uid|./internal/broker/|^TestAnotherUserChurnRefused$"
  "half-open|./internal/broker/|^TestHalfOpenFlood$"
  "full disk|./cmd/envsieve/|^TestAuditFailsClosed$"
  "daemon disk|./cmd/envsieve/|^TestDaemonAuditFailsClosed$"
  "SIGSTOP 15 s|./cmd/envsieve/|^TestStoppedLauncher(Begun)?$"
  "SIGKILL|./cmd/envsieve/|^TestKilledLauncher$"
  "lifetime|./cmd/envsieve/|^TestNothingOutlivesTheLaunch$"
)
echo "# $(go version), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %-6s %8s  %s\n' "LOAD OR FAULT" "HELD" "SECONDS" "FIGURES"
status=0
for row in "${rows[@]}"; do
  IFS='|' read -r name pkg re <<<"$row"
  start=$(date +%s.%N)
  go test -count=1 -v -run "$re" "$pkg" >"$out/log" 2>&1
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  held=yes
  [ $rc -eq 0 ] || { held=NO; status=1; }
  figures=$(grep -E '^\s+[a-z_]+_test\.go:[0-9]+: ' "$out/log" | sed -E 's/^\s+[a-z_]+_test\.go:[0-9]+: //' | grep -v '^envsieve: debug' | head -3 | paste -sd ';' -)
  printf '%-14s %-6s %8.1f  %s\n' "$name" "$held" "$secs" "${figures:--}"
done
echo
echo "## a new connection's round trip (ms), direct and through the broker"
go test -count=1 -run '^$' -bench '^BenchmarkNewConn$' -benchtime 400x ./internal/broker/ | grep -E 'Benchmark|ms'
exit $status
