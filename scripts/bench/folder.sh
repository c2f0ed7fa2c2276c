# shellcheck shell=bash
# Section "folder" of scripts/bench.sh: a folder of 3,000 small files (13 MB, 30 folders of 100,
# sizes 2 to 6.7 KB, random bytes) attached as one folder, against copying it by hand.
#
#   attachctl upload DIR          vs  cp -r DIR COPY && sync     goal: ratio <= 2.0
#   attachctl upload --each DIR   vs  cp -r DIR COPY && sync     goal: ratio <= 2.0
#   scripts/bench/eachfloor       vs  cp -r DIR COPY && sync     the floor of --each's layout
#   scripts/bench/eachfloor -inplace  vs  the same               that layout without "appears whole"
# each after rm -rf of the last run's output and after mv of it aside, wall and CPU time.
#   attachctl prepare --resolve DIR (fresh store), after mv and rm goal: < 1 s
#     (beside cp -r DIR COPY && sync in the same condition, for what the file system allows then)
#   attachctl prepare DIR: the prompt's bytes (not seconds)      goal: < 1 KB
#
# `upload DIR` is one folder upload (one id, the tree under STORE/<id>/DIR/, one commit);
# `--each` is one upload per file (3,000 ids), committed in batches. Both read each file once and
# end with every byte durable and hashed, as `cp -r` then `sync` ends with the bytes durable (and
# not hashed). The sides take turns, each from an empty store or no copy, the tree in the page cache.
#
# Figures: docs/benchmarks.md, and docs/folders.md.
#
# Sourced by scripts/bench.sh, which provides $ATTACHCTL, $WORK, median_time, row, upload_pair and
# need. Also runs standalone (`bash scripts/bench/folder.sh`).

# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# one_run CMD: runs the shell command CMD once, its output discarded: "wall cpu" (cpu: user + sys).
one_run() {
	local r
	r=$( { /usr/bin/env TIMEFORMAT='%R %U %S' bash -c "time { $1 ; } >/dev/null 2>&1"; } 2>&1 | tail -n 1)
	awk '{printf "%s %.3f\n", $1, $2 + $3}' <<<"$r"
}

med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# folder_pair OURS THEIRS: like upload_pair (turns, $PREP before each run, $REPS runs a side), and
# also the median CPU time of each side: "wall_ours wall_theirs cpu_ours cpu_theirs". Without
# THEIRS, ours alone: "wall cpu".
folder_pair() {
	local reps=${REPS:-5} i o=() h=() oc=() hc=() w c
	for ((i = 0; i < reps; i++)); do
		eval "$PREP"
		read -r w c < <(one_run "$1")
		o+=("$w") && oc+=("$c")
		[ -n "${2:-}" ] || continue
		eval "$PREP"
		read -r w c < <(one_run "$2")
		h+=("$w") && hc+=("$c")
	done
	if [ -z "${2:-}" ]; then
		echo "$(med "${o[@]}") $(med "${oc[@]}")"
		return
	fi
	echo "$(med "${o[@]}") $(med "${h[@]}") $(med "${oc[@]}") $(med "${hc[@]}")"
}

# folder_aside moves the last run's store and copy aside (nothing freed; removed at the end). The
# first run has neither: under bench.sh's set -e a failing mv ended the section (bash then said
# only "pop_var_context").
folder_aside() {
	FOLDER_N=$((FOLDER_N + 1))
	mkdir -p "$FOLDER_DIR/old"
	mv "$FOLDER_DIR/store" "$FOLDER_DIR/old/s$FOLDER_N" 2>/dev/null || true
	mv "$FOLDER_DIR/copy" "$FOLDER_DIR/old/c$FOLDER_N" 2>/dev/null || true
	sync
}

folder_bench() {
	local dir=$WORK/folder t theirs bytes
	rm -rf "$dir"
	mkdir -p "$dir"
	small_tree "$dir/src" || return 1
	# The floor under --each: only the system calls its layout needs (a folder and a file an
	# upload, renamed into place after one syncfs), no hashing, no checks, no metadata.
	local floor=$WORK/eachfloor
	(cd "$REPO" && go build -o "$floor" ./scripts/bench/eachfloor) || return 1
	local by_hand="cp -r '$dir/src' '$dir/copy' && sync"
	local prep="rm -rf '$dir/store' '$dir/copy'; sync"
	# Two ways to start each run. After mv of the last run's output aside (nothing freed lately;
	# removed at the end), first, before anything is removed. After rm -rf of it (as a user who
	# just cleaned up): on ext4 without a journal, as on the dev VM, every file made in the next
	# ~30 s then scans the inodes just freed, a cost per file made (--each makes three a file: its
	# folder, bytes and metadata; cp one).
	FOLDER_DIR=$dir FOLDER_N=0
	local w c
	for how in mv rm; do
		[ "$how" = rm ] && p=$prep || p=folder_aside
		PREP=$p && read -r t theirs c w < <(folder_pair "'$ATTACHCTL' upload --quiet --store '$dir/store' '$dir/src'" "$by_hand")
		row "upload 3,000 small files (13 MB) as one folder, $how" "$t" "$theirs" "<= 2.0"
		row "  its CPU (user+sys), $how" "$c" "$w" ""
		PREP=$p && read -r t theirs c w < <(folder_pair "'$ATTACHCTL' upload --quiet --each --store '$dir/store' '$dir/src'" "$by_hand")
		row "upload 3,000 small files (13 MB), --each, $how" "$t" "$theirs" ""
		row "  its CPU (user+sys), $how" "$c" "$w" ""
		local each=$t
		PREP=$p && read -r t theirs c w < <(folder_pair "'$floor' '$dir/src' '$dir/store'" "$by_hand")
		row "  the layout's floor for --each (scripts/bench/eachfloor), $how" "$t" "$theirs" ""
		row "  --each against that floor, $how" "$each" "$t" "<= 1.2"
		PREP=$p && read -r t theirs c w < <(folder_pair "'$floor' -inplace '$dir/src' '$dir/store'" "$by_hand")
		row "  the same, nothing renamed (eachfloor -inplace), $how" "$t" "$theirs" ""
		PREP=$p && read -r t theirs c w < <(folder_pair "'$ATTACHCTL' prepare --quiet --store '$dir/store' --resolve --text review '$dir/src'" "$by_hand")
		row "prepare --resolve of the 3,000-file folder (fresh store), $how" "$t" "$theirs" "< 1 s"
		row "  its CPU (user+sys), $how" "$c" "$w" ""
	done
	rm -rf "$dir/old" "$dir/store"
	bytes=$("$ATTACHCTL" prepare --quiet --store "$dir/store" --text review "$dir/src" | wc -c)
	row "prompt of the 3,000-file folder, in KB (not s)" "$(awk -v b="$bytes" 'BEGIN { printf "%.3f", b/1000 }')" 1.000 "< 1 KB"
	rm -rf "$dir"
}

folder_bench
