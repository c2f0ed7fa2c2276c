#!/usr/bin/env bash
# The benchmark against the tools people use today. Each section is a file in scripts/bench/,
# sourced in order; each prints table rows of medians and ratios with `row`.
#
#   scripts/bench.sh              every section; the table also goes into docs/benchmarks.md
#   scripts/bench.sh sniff upload only the sections named (printed, docs/benchmarks.md left alone)
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
go build -tags urfave_cli_no_docs -o "$ATTACHCTL" ./cmd/attachctl # as scripts/release.sh builds it
export ATTACHCTL
# shellcheck source=bench/lib.bash
source scripts/bench/lib.bash

OUT=${BENCH_OUT-docs/benchmarks.md}
[ $# -eq 0 ] || OUT=${BENCH_OUT-}
TABLE=$WORK/table.md
rm -f "$WORK/load.txt"
{
	printf '| %-52s | %11s | %11s | %7s | %-12s |\n' "what (ours vs theirs)" "ours" "theirs" "ratio" "goal"
	printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "-------------" "-------------" "---------" "--------------"
	for section in scripts/bench/*.sh; do
		name=$(basename "$section" .sh)
		if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
		# What the last section wrote is flushed first, so that its writeback does not run, and
		# take a core, in the next section's timings.
		sync
		printf '%s %s\n' "$name" "$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)" >>"$WORK/load.txt"
		# shellcheck source=/dev/null
		source "$section"
	done
} | tee "$TABLE"
if [ -n "$OUT" ]; then
	# The table replaces what lies between the markers of docs/benchmarks.md; the rest of the page
	# (what the rows mean, the folder runs, the test times) is written by hand and stays.
	{
		echo "Written by \`scripts/bench.sh\` (the method of each row is in the header of its section,"
		echo "\`scripts/bench/*.sh\`); run it again to replace this part. Medians of several runs, the page"
		echo "cache warm for both sides. What the goals mean and why a row is where it is:"
		echo "[What the rows mean](#what-the-rows-mean)."
		echo
		echo "- when: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "- commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
		echo "- machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null), $(uname -sr)"
		echo "- $(go version)"
		echo "- load (1-minute average) as each section began: $(awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}' "$WORK/load.txt")"
		echo
		cat "$TABLE"
	} >"$WORK/generated.md"
	if ! grep -q '^<!-- scripts/bench.sh: begin' "$OUT" 2>/dev/null; then
		cp "$WORK/generated.md" "$OUT" # a file of its own (BENCH_OUT): the table alone
	else
		awk -v gen="$WORK/generated.md" '
			/^<!-- scripts\/bench.sh: begin/ { print; while ((getline l < gen) > 0) print l; skip = 1; next }
			/^<!-- scripts\/bench.sh: end/ { skip = 0 }
			!skip' "$OUT" >"$WORK/page.md"
		cp "$WORK/page.md" "$OUT"
	fi
	echo "bench: table written to $OUT" >&2
fi
