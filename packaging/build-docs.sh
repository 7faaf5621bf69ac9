#!/usr/bin/env bash
# Builds what every release archive ships besides the programs: a man page per
# command and the bash, zsh and fish completions, into build/docs/
# (goreleaser's before hook; the archives take them from there and put them
# where make install does, under share/). $1 is the version the man pages
# name. The pages come from a build of envsieve with the envsieve_docs tag, as
# make man makes them; the completions from the same build.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-0.1.0-dev}
out="$PWD/build/docs"
rm -rf "$out"
mkdir -p "$out/man" "$out/completions"
docs="$out/envsieve-docs"
CGO_ENABLED=0 go build -tags envsieve_docs -ldflags "-X main.version=$version" -o "$docs" ./cmd/envsieve
"$docs" __man "$out/man"
"$docs" completion bash >"$out/completions/envsieve"
"$docs" completion zsh >"$out/completions/_envsieve"
"$docs" completion fish >"$out/completions/envsieve.fish"
rm "$docs"
ls "$out/man/envsieve.1" >/dev/null
