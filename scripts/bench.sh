#!/usr/bin/env bash
# The benchmark against the tools people use today. Each section is a file in scripts/bench/,
# sourced in order; each prints table rows of medians and ratios with `row`.
#
#   scripts/bench.sh              every section; the table also goes to BENCHMARKS.md
#   scripts/bench.sh sniff upload only the sections named (printed, BENCHMARKS.md left alone)
#
# BENCH_OUT=FILE writes the table to FILE (with the machine it ran on) whatever the sections;
# BENCH_OUT= (empty) writes no file.
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

OUT=${BENCH_OUT-BENCHMARKS.md}
[ $# -eq 0 ] || OUT=${BENCH_OUT-}
TABLE=$WORK/table.md
{
	printf '| %-52s | %11s | %11s | %7s | %-12s |\n' "what (ours vs theirs)" "ours" "theirs" "ratio" "goal"
	printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "-------------" "-------------" "---------" "--------------"
	for section in scripts/bench/*.sh; do
		name=$(basename "$section" .sh)
		if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
		# shellcheck source=/dev/null
		source "$section"
	done
} | tee "$TABLE"
if [ -n "$OUT" ]; then
	{
		echo "# Benchmarks"
		echo
		echo "Written by \`scripts/bench.sh\` (the method of each row is in the header of its section,"
		echo "\`scripts/bench/*.sh\`); run it again to replace this page. Medians of several runs, the page"
		echo "cache warm for both sides. What the goals mean and why a row is where it is: the README's"
		echo "Benchmarks section."
		echo
		echo "- when: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "- commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
		echo "- machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null), $(uname -sr)"
		echo "- $(go version)"
		echo
		cat "$TABLE"
	} >"$OUT"
	echo "bench: table written to $OUT" >&2
fi
