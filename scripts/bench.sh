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

# need PKG CMD: install the Debian package PKG when CMD is not on the PATH.
APT_UPDATED=0
need() {
	command -v "$2" >/dev/null 2>&1 && return 0
	if [ "$APT_UPDATED" = 0 ]; then apt-get update -qq >/dev/null; APT_UPDATED=1; fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}

# median_time CMD...: runs CMD $REPS times (default 5), its output discarded, and prints the
# median wall time in seconds. PREP, when set, is run (untimed) before each run.
median_time() {
	local reps=${REPS:-5} i t times=()
	for ((i = 0; i < reps; i++)); do
		[ -z "${PREP:-}" ] || eval "$PREP"
		t=$( { /usr/bin/env TIMEFORMAT=%R bash -c 'time "$@" >/dev/null 2>&1' _ "$@"; } 2>&1 | tail -n 1)
		times+=("$t")
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# peak_rss_mib CMD...: the peak resident memory of one run of CMD, in MiB.
peak_rss_mib() {
	need time /usr/bin/time
	/usr/bin/time -f '%M' -o "$WORK/.rss" "$@" >/dev/null 2>&1
	awk '{printf "%.1f", $1/1024}' "$WORK/.rss"
}

# row NAME OURS THEIRS GOAL: one line of the table; ratio is OURS/THEIRS.
row() {
	local ratio
	ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { if (b > 0) printf "%.3f", a/b; else print "-" }')
	printf '| %-52s | %9s s | %9s s | %7s | %-12s |\n' "$1" "$2" "$3" "$ratio" "$4"
}

printf '| %-52s | %11s | %11s | %7s | %-12s |\n' "what (ours vs theirs)" "ours" "theirs" "ratio" "goal"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "-------------" "-------------" "---------" "--------------"
for section in scripts/bench/*.sh; do
	name=$(basename "$section" .sh)
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
	# shellcheck source=/dev/null
	source "$section"
done
