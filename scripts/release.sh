#!/usr/bin/env bash
# Release archives of attachctl, the same bytes on every run from the same source:
#
#   scripts/release.sh [-o DIR] VERSION [OS/ARCH...]
#
# builds attachctl VERSION (stamped with -X main.version, -trimpath, no VCS stamp, no build id,
# CGO off) for each OS/ARCH (default: linux, darwin, freebsd and windows on amd64 and arm64) and
# writes DIR (default dist/) with one archive per target, attachctl-VERSION-OS-ARCH.tar.gz (a .zip
# for windows) holding the binary, the manual page, LICENSE, README.md and the bundled decoders'
# licences, and SHA256SUMS, which `sha256sum -c SHA256SUMS` checks. Every entry's time is
# SOURCE_DATE_EPOCH (default: the last commit's time).
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist
if [ "${1:-}" = -o ]; then
	out=$2
	shift 2
fi
if [ $# -lt 1 ]; then
	echo "usage: scripts/release.sh [-o DIR] VERSION [OS/ARCH...]" >&2
	exit 2
fi
version=$1
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 freebsd/amd64 freebsd/arm64 windows/amd64 windows/arm64)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
export CGO_ENABLED=0
# urfave_cli_no_docs leaves out urfave/cli's man page and Markdown writers (attachctl writes its
# own), and with them a Markdown parser whose package init every start of attachctl paid for.
flags=(-trimpath -buildvcs=false -tags urfave_cli_no_docs -ldflags "-s -w -buildid= -X main.version=$version")

# The manual page, from a build for this machine (the page does not depend on the platform).
go build "${flags[@]}" -o "$work/host/attachctl" ./cmd/attachctl
"$work/host/attachctl" man > "$work/attachctl.1"
go build -trimpath -o "$work/mkarchive" ./scripts/mkarchive

licences=(LICENSE.jpeg=shrink/internal/jpeg/LICENSE)
for f in shrink/internal/heif/LICENSE.*; do
	licences+=("licenses/${f##*/}=$f")
done
licences[0]="licenses/${licences[0]}"

# The targets are built $RELEASE_JOBS at a time (default 2): one build alone leaves a core idle
# for much of its end (the largest packages and the link come last, one after another). Each
# build's output is shown when it ends; any failure fails the release.
host=$(go env GOOS)/$(go env GOARCH)
jobs=${RELEASE_JOBS:-2}
pids=() logs=()
failed=0
reap() { # waits for the oldest build still running
	local pid=${pids[0]} log=${logs[0]}
	pids=("${pids[@]:1}") logs=("${logs[@]:1}")
	wait "$pid" || failed=1
	cat "$log" >&2
}
for t in "${targets[@]}"; do
	os=${t%/*} arch=${t#*/}
	name=attachctl-$version-$os-$arch
	exe=attachctl
	[ "$os" = windows ] && exe=attachctl.exe
	mkdir -p "$work/$name"
	if [ "$t" = "$host" ]; then
		cp "$work/host/attachctl" "$work/$name/$exe" # the same build
		continue
	fi
	[ ${#pids[@]} -lt "$jobs" ] || reap
	GOOS=$os GOARCH=$arch go build "${flags[@]}" -o "$work/$name/$exe" ./cmd/attachctl >"$work/$name.log" 2>&1 &
	pids+=($!) logs+=("$work/$name.log")
done
while [ ${#pids[@]} -gt 0 ]; do reap; done
[ "$failed" = 0 ] || { echo "release: a build failed" >&2; exit 1; }

archives=()
for t in "${targets[@]}"; do
	os=${t%/*} arch=${t#*/}
	name=attachctl-$version-$os-$arch
	exe=attachctl
	[ "$os" = windows ] && exe=attachctl.exe
	archive=$name.tar.gz
	[ "$os" = windows ] && archive=$name.zip
	"$work/mkarchive" -o "$out/$archive" -prefix "$name" -mtime "$epoch" \
		"$exe=$work/$name/$exe" "attachctl.1=$work/attachctl.1" LICENSE README.md "${licences[@]}"
	archives+=("$archive")
	echo "release: $out/$archive"
done
(cd "$out" && sha256sum "${archives[@]}" > SHA256SUMS)
echo "release: $out/SHA256SUMS"
