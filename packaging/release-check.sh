#!/usr/bin/env bash
# The release, checked as CI can: goreleaser (pinned, from the Go module
# proxy) validates .goreleaser.yaml and builds a snapshot of every archive;
# then the linux/amd64 archive's envsieve runs from a clean directory and
# finds its shim and envsieve-daemon there.
set -euo pipefail
cd "$(dirname "$0")/.."
GORELEASER_VERSION=v2.12.7
CYCLONEDX_VERSION=v1.9.0
tools="$PWD/build/tools"
mkdir -p "$tools"
[ -x "$tools/goreleaser" ] || GOBIN="$tools" go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
[ -x "$tools/cyclonedx-gomod" ] || GOBIN="$tools" go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_VERSION"
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
	if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-aarch64-linux-gnu
	else
		echo "release-check: the arm64 shim needs gcc-aarch64-linux-gnu" >&2
		exit 1
	fi
fi
export PATH="$tools:$PATH"
goreleaser check
goreleaser release --snapshot --clean --skip=publish
ls dist/*.tar.gz dist/checksums.txt dist/*.cdx.json
clean=$(mktemp -d)
trap 'rm -rf "$clean"' EXIT
tar -xzf dist/envsieve_*_linux_amd64.tar.gz -C "$clean"
root=$(echo "$clean"/envsieve_*)
# Every archive carries the LICENSE, the man pages and the completions, where
# make install puts them; both programs name the release's version.
for f in LICENSE README.md share/man/man1/envsieve.1 share/man/man1/envsieve-run.1 \
	share/bash-completion/completions/envsieve share/zsh/site-functions/_envsieve \
	share/fish/vendor_completions.d/envsieve.fish; do
	[ -s "$root/$f" ] || { echo "release-check: the linux/amd64 archive lacks $f" >&2; exit 1; }
done
for a in dist/envsieve_*_darwin_*.tar.gz dist/envsieve_*_linux_arm64.tar.gz; do
	list=$(tar -tzf "$a")
	for f in LICENSE share/man/man1/envsieve.1 share/bash-completion/completions/envsieve; do
		grep -q "/$f\$" <<<"$list" || { echo "release-check: $a lacks $f" >&2; exit 1; }
	done
done
version=${root##*/envsieve_}
version=${version%_linux_amd64}
[ "$("$root/bin/envsieve" --version)" = "envsieve $version" ] ||
	{ echo "release-check: envsieve is not stamped with $version" >&2; exit 1; }
[ "$("$root/bin/envsieve-daemon" --version)" = "envsieve-daemon $version" ] ||
	{ echo "release-check: envsieve-daemon is not stamped with $version" >&2; exit 1; }
(cd "$clean" && env -i PATH=/usr/bin:/bin "$root/bin/envsieve" run -- /bin/true)
explain=$(env -i PATH=/usr/bin:/bin "$root/bin/envsieve" explain -- /bin/true)
grep -q '^shim:    loads' <<<"$explain"
help=$(env -i PATH=/usr/bin:/bin "$root/bin/envsieve" client --help)
grep -q "client speaks to 'envsieve daemon'" <<<"$help"
arm64=$(tar -tzf dist/envsieve_*_linux_arm64.tar.gz)
grep -q 'lib/envsieve/libenvsieve.so$' <<<"$arm64"
grep -q 'lib/envsieve/envsieve-start$' <<<"$arm64"
grep -q 'lib/envsieve/envsieve-init$' <<<"$arm64"
# A rule's program is started by the launcher through envsieve-start.
mkdir "$clean/sys" && cp /bin/true "$clean/sys/gh" && chmod 0755 "$clean/sys/gh"
printf 'version: 1\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n' > "$clean/p.yaml"
(cd "$clean" && env -i PATH="$clean/sys:/usr/bin:/bin" ENVSIEVE_AUDIT="$clean/a.jsonl" "$root/bin/envsieve" run --policy "$clean/p.yaml" -- sh -c 'gh')
grep -q '"msg":"grant"' "$clean/a.jsonl"
echo "release-check: snapshot archives built, with the LICENSE, man pages and completions; the linux/amd64 envsieve and envsieve-daemon name the version, and envsieve runs and finds its shim, envsieve-start and daemon"
