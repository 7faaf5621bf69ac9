#!/usr/bin/env bash
# Side by side, in one run: what the credential broker adds to an HTTPS
# request, against the direct request (the floor), a plain CONNECT tunnel,
# and mitmproxy doing the same header rewrite (installed from Debian when
# missing and we are root). Figures go to docs/benchmarks.md.
# Usage: bash bench/broker.sh [REQUESTS] [MiB]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mitmdump >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mitmproxy >/dev/null 2>&1 || echo "# mitmproxy could not be installed"
fi
echo "# $(go version), $(nproc) cores"
go run ./bench/broker -n "${1:-2000}" -mb "${2:-1024}"
