# sweep of 100,000 uploads, half of them stale, against find -mtime -exec rm -rf on the same layout.
bench_sweep() {
	local store=$WORK/sweep-store n=${SWEEP_N:-100000}
	go build -o "$WORK/mkstore" ./scripts/bench/mkstore
	# Build once, keep a pristine copy, and restore it (untimed) before each run.
	rm -rf "$store.orig" && "$WORK/mkstore" "$store.orig" "$n" 10
	local ours theirs
	ours=$(PREP="rm -rf '$store'; cp -a '$store.orig' '$store'" median_time "$ATTACHCTL" sweep --store "$store" --older-than 120h --quiet)
	theirs=$(PREP="rm -rf '$store'; cp -a '$store.orig' '$store'" median_time find "$store" -mindepth 1 -maxdepth 1 -mtime +5 -exec rm -rf {} +)
	row "sweep: 100,000 uploads, half stale (vs find -exec rm)" "$ours" "$theirs" "<= 1.5"
	rm -rf "$store" "$store.orig"
}
REPS=${REPS:-3} bench_sweep
