#!/usr/bin/env bash
# Builds libenvsieve.so, envsieve-start and envsieve-init for each Linux architecture a release ships, into
# build/shim/linux_ARCH/ (goreleaser's before hook; the archives take it from
# there). The arm64 one needs Debian's cross compiler, gcc-aarch64-linux-gnu.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s -C shim/libenvsieve OUT="$PWD/build/shim/linux_amd64/libenvsieve.so" CC="${CC_AMD64:-gcc}"
make -s -C shim/libenvsieve OUT="$PWD/build/shim/linux_arm64/libenvsieve.so" CC="${CC_ARM64:-aarch64-linux-gnu-gcc}"
