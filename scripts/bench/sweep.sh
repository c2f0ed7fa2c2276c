# sweep of 100,000 uploads, half of them stale, against find -mtime -exec rm -rf on the same layout.
# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
bench_sweep() {
	local store=$WORK/sweep-store n=${SWEEP_N:-100000}
	go build -o "$WORK/mkstore" ./ops/store/internal/mkstore
	# A fresh store (untimed) before each run: mkstore lays out n uploads, half of them stale,
	# faster than cp -a of a pristine copy.
	local prep="rm -rf '$store'; '$WORK/mkstore' '$store' $n 10 >/dev/null"
	local ours theirs
	ours=$(PREP="$prep" median_time "$ATTACHCTL" sweep --store "$store" --older-than 120h --quiet)
	theirs=$(PREP="$prep" median_time find "$store" -mindepth 1 -maxdepth 1 -mtime +5 -exec rm -rf {} +)
	row "sweep: 100,000 uploads, half stale (vs find -exec rm)" "$ours" "$theirs" "<= 1.5"
	rm -rf "$store"
}
REPS=${REPS:-3} bench_sweep
