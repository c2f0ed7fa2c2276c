# shellcheck shell=bash
# The helpers every section of scripts/bench.sh uses. bench.sh sources this first; a section run on
# its own (`bash scripts/bench/upload.sh`) sources it itself, and then this file also sets up
# $REPO, $WORK (a new folder under /tmp, removed at the end unless BENCH_KEEP=1) and $ATTACHCTL
# (built from the checkout).
BENCH_LIB=1
if [ -z "${REPO:-}" ]; then
	REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fi
if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d /tmp/attachctl-bench.XXXXXX)
	[ "${BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
fi
if [ -z "${ATTACHCTL:-}" ]; then
	ATTACHCTL=$WORK/attachctl
	# As scripts/release.sh builds it.
	(cd "$REPO" && go build -tags urfave_cli_no_docs -o "$ATTACHCTL" ./cmd/attachctl) || exit 1
fi
export REPO WORK ATTACHCTL

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

# make_shots DIR: 50 valid PNGs of exactly 819,200 bytes that nothing compresses.
make_shots() {
	need python3 python3
	python3 - "$1" <<'PY'
import os, struct, sys, zlib
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
for i in range(50):
    w, h = 16, 12
    raw = b"".join(b"\0" + os.urandom(4 * w) for _ in range(h))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 0))
    pad = 819200 - len(png) - 12 - 12
    png += chunk(b"paDd", os.urandom(pad)) + chunk(b"IEND", b"")
    with open(os.path.join(out, "shot-%02d.png" % i), "wb") as f:
        f.write(png)
PY
}

# turns_times PREP1 CMD1 [PREP2 CMD2 ...]: runs the shell commands in turns, $REPS times each
# (default 5), each after its own PREP (untimed), and prints their median wall times on one line.
# Taking turns keeps a machine whose load changes from favouring any of them.
turns_times() {
	local reps=${REPS:-5} i j n=$(($# / 2)) args=("$@") t all=()
	for ((i = 0; i < reps; i++)); do
		for ((j = 0; j < n; j++)); do
			eval "${args[2 * j]}"
			t=$( { /usr/bin/env TIMEFORMAT=%R bash -c "time { ${args[2 * j + 1]} ; } >/dev/null 2>&1"; } 2>&1 | tail -n 1)
			all[j * reps + i]=$t
		done
	done
	for ((j = 0; j < n; j++)); do
		printf '%s\n' "${all[@]:j*reps:reps}" | sort -n | awk '{a[NR]=$1} END {printf "%s", a[int((NR+1)/2)]}'
		[ $((j + 1)) = "$n" ] && echo || printf ' '
	done
}

# upload_pair OURS THEIRS: turns_times of the two shell commands, with $PREP before every run.
upload_pair() { turns_times "${PREP:-}" "$1" "${PREP:-}" "$2"; }

# small_tree DIR: the folder rows' tree, 3,000 files of 2 to 6.7 KB of random bytes (13 MB) in 30
# folders of 7, the same every time, read once so that it is in the page cache.
small_tree() {
	need python3 python3
	python3 - "$1" <<'PY' || return 1
import os, random, sys
random.seed(19)
root = sys.argv[1]
for i in range(3000):
    d = os.path.join(root, "d%02d" % (i % 30), "s%d" % (i % 7))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d.txt" % i), "wb") as f:
        f.write(os.urandom(random.randint(2000, 6700)))
PY
	cat "$1"/*/*/* >/dev/null
}
