#!/usr/bin/env bash
# Precision, recall and throughput of envsieve's text scanner (detect.Scan)
# next to gitleaks, in one run, on a labelled corpus of build and tool output
# with fake credentials mixed in (see bench/detect/main.go).
#
# Usage: bash bench/detect.sh [GITLEAKS_BINARY]
#
# Without an argument the script installs gitleaks $version into a temporary
# GOBIN with `go install`; if that fails it says so and reports envsieve's
# own figures. The corpus is generated in a temporary directory, the same
# bytes on every run (fixed seed), and removed at the end; to keep one:
#   go run ./bench/detect gen DIR && go run ./bench/detect score -gitleaks PATH DIR
set -euo pipefail
cd "$(dirname "$0")/.."

module=github.com/zricethezav/gitleaks/v8
version=v8.30.1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gitleaks=${1:-}
if [[ -z $gitleaks ]]; then
  echo "# installing gitleaks $version ($module) into a temporary GOBIN"
  # Outside the module, so that nothing here touches go.mod.
  if ! (cd "$tmp" && go list -m -versions "$module" 2>/dev/null | tr ' ' '\n' | grep -qx "$version"); then
    echo "# gitleaks: the module proxy does not list $module $version here" >&2
  elif (cd "$tmp" && GOBIN="$tmp/bin" go install "$module@$version") >"$tmp/install.log" 2>&1; then
    gitleaks=$tmp/bin/gitleaks
  fi
  if [[ -z $gitleaks ]]; then
    echo "#" >&2
    echo "# GITLEAKS COULD NOT BE INSTALLED HERE: the figures below are envsieve's only." >&2
    [[ -s $tmp/install.log ]] && sed 's/^/#   /' "$tmp/install.log" | tail -5 >&2
    echo "# (pass the path of a gitleaks binary as the first argument to compare)" >&2
    echo "#" >&2
  fi
fi

go build -o "$tmp/detect" ./bench/detect
echo "# $(go version), $(nproc) cores; one core used by each scanner"
"$tmp/detect" gen "$tmp/corpus"
echo
if [[ -n $gitleaks ]]; then
  "$tmp/detect" score -gitleaks "$gitleaks" "$tmp/corpus"
else
  "$tmp/detect" score "$tmp/corpus"
fi
