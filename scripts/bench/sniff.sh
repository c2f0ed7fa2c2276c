# shellcheck shell=bash
# Section "sniff" of scripts/bench.sh: `attachctl sniff` over 10,000 mixed small files against the
# tools people use today.
#
#   attachctl sniff --no-hash DIR   vs  file --mime-type -b FILES...   goal: ours at least 10x faster
#   attachctl sniff DIR             vs  b3sum FILES...                 goal: ours within 1.2x
#   attachctl sniff --no-hash DIR   vs  headfloor DIR (in turns)       goal: ours within 2x
#
# The files (PNG, JPEG with EXIF, UTF-8 text, JSON, PDF, ZIP, random binary; 1 to 64 KiB each, about
# 310 MiB in all, spread over 100 folders) come from `go run ./scripts/gensamples -mixed 10000 DIR`,
# the same every run. Both sides read them from the page cache: each command runs once untimed
# first. The other tools get their file list from `find -print0 | xargs -0`: xargs may split the
# 10,000 paths over a few processes (its command-line limit), which costs them a few exec's; that
# is how they are used over many files, and is counted. attachctl runs with --jobs = number of
# CPUs (its default, given explicitly); b3sum uses its own threads (its default). A third row times
# scripts/bench/headfloor, which makes only the system calls of reading every head and nothing
# else: the floor under any sniff that reads files one system call at a time.
#
# Sourced by scripts/bench.sh, which provides $ATTACHCTL, $WORK, median_time, row and need. Also
# runs standalone (`bash scripts/bench/sniff.sh`): then it builds attachctl and defines those
# helpers itself.

# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

sniff_bench() {
	local dir=$WORK/mixed jobs n
	jobs=$(nproc)
	need file file
	need b3sum b3sum
	if [ "$(find "$dir" -type f 2>/dev/null | wc -l)" != 10000 ]; then
		rm -rf "$dir"
		(cd "$REPO" && go run ./scripts/gensamples -mixed 10000 "$dir") || return 1
	fi
	# Sanity, and a warm page cache: one record per file, none failed.
	n=$("$ATTACHCTL" sniff --each --jobs "$jobs" "$dir" | grep -c '"blake3"') || true
	if [ "$n" != 10000 ]; then
		echo "sniff bench: attachctl sniff gave $n hashed records for 10000 files" >&2
		return 1
	fi
	find "$dir" -type f -print0 | xargs -0 file --mime-type -b >/dev/null
	find "$dir" -type f -print0 | xargs -0 b3sum >/dev/null

	# The floor: only the system calls of reading each head (scripts/bench/headfloor). Ours and
	# the floor take turns, SNIFF_REPS times each (default 15: a run is a tenth of a second), so
	# that a change in the machine's speed moves both alike; `file` is timed on its own.
	(cd "$REPO" && go build -o "$WORK/headfloor" ./scripts/bench/headfloor) || return 1
	local ours theirs floor
	read -r ours floor < <(REPS=${SNIFF_REPS:-15} turns_times \
		: "\"\$ATTACHCTL\" sniff --each --jobs $jobs --no-hash '$dir'" \
		: "\"\$WORK/headfloor\" '$dir'")
	theirs=$(median_time sh -c 'find "$1" -type f -print0 | xargs -0 file --mime-type -b' _ "$dir")
	row "sniff --no-hash vs file --mime-type (10k files)" "$ours" "$theirs" "<= 0.100"
	# Where the floor's ratio to `file` is near 0.1, the 10x goal is out of reach on this machine.
	row "floor: open+fstat+read+close only, vs file" "$floor" "$theirs" "-"
	row "sniff --no-hash vs its floor, in turns" "$ours" "$floor" "<= 2.0"
	ours=$(median_time "$ATTACHCTL" sniff --each --jobs "$jobs" "$dir")
	theirs=$(median_time sh -c 'find "$1" -type f -print0 | xargs -0 b3sum' _ "$dir")
	row "sniff (BLAKE3) vs b3sum (10k files)" "$ours" "$theirs" "<= 1.200"
}

sniff_bench
