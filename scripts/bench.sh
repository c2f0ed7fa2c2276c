#!/usr/bin/env bash
# The benchmark against the tools people use today. Each section is a file in scripts/bench/,
# sourced in order; each prints table rows of medians and ratios with `row`.
#
#   scripts/bench.sh              every section
#   scripts/bench.sh sniff upload only the sections named
#
# Needs: go, and the tools each section compares with (it installs Debian packages when missing
# and it runs as root). Scratch files go to $BENCH_WORK (default a new folder under /tmp, removed
# at the end unless BENCH_KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
WORK=${BENCH_WORK:-$(mktemp -d /tmp/attachctl-bench.XXXXXX)}
mkdir -p "$WORK"
[ "${BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
export WORK REPO
ATTACHCTL=$WORK/attachctl
go build -o "$ATTACHCTL" ./cmd/attachctl
export ATTACHCTL
# shellcheck source=bench/lib.bash
source scripts/bench/lib.bash

printf '| %-52s | %11s | %11s | %7s | %-12s |\n' "what (ours vs theirs)" "ours" "theirs" "ratio" "goal"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "-------------" "-------------" "---------" "--------------"
for section in scripts/bench/*.sh; do
	name=$(basename "$section" .sh)
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
	# shellcheck source=/dev/null
	source "$section"
done
