# shellcheck shell=bash
# Section "upload" of scripts/bench.sh: `attachctl upload` against what a careful user does by hand.
#
#   attachctl upload BIG              vs  cp BIG COPY; sync COPY; b3sum COPY    goal: ratio <= 1.0,
#                                                                               peak RSS < 32 MiB
#   attachctl upload 50 PNGs          vs  cp; sync; b3sum of the 50 copies      goal: < 252 ms (the
#                                                                               field's figure)
#
# BIG is a 2 GiB file of random bytes (BENCH_UPLOAD_MIB to change it). `upload BIG` sniffs BIG's
# head and hashes every byte in the upload's own pass (one read of BIG), writing the BLAKE3 into the
# record, so both sides end with a durable copy and its BLAKE3. Every run
# of either side starts from an empty store or no copy (untimed), and the two sides take turns, so
# a change of the machine's load favours neither; the source is in the page cache for both (one
# untimed read first). The PNGs are 50 valid, incompressible PNGs of 819,200
# bytes each. attachctl runs with its defaults (--jobs = CPUs, --chunk 512 KiB).
#
# Figures: docs/benchmarks.md.
#
# Sourced by scripts/bench.sh, which provides $ATTACHCTL, $WORK, median_time, peak_rss_mib, row and
# need. Also runs standalone (`bash scripts/bench/upload.sh`).

# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

upload_bench() {
	local dir=$WORK/upload mib=${BENCH_UPLOAD_MIB:-2048} t theirs rss
	rm -rf "$dir"
	mkdir -p "$dir"
	need b3sum b3sum
	head -c "$((mib << 20))" /dev/urandom >"$dir/big.bin" || return 1
	cat "$dir/big.bin" >/dev/null
	local by_hand="cp '$dir/big.bin' '$dir/copy.bin' && sync '$dir/copy.bin' && b3sum '$dir/copy.bin'"
	local ours="'$ATTACHCTL' upload --quiet --store '$dir/store' '$dir/big.bin'"
	local prep="rm -rf '$dir/store' '$dir/copy.bin'; sync"
	read -r t theirs < <(PREP=$prep upload_pair "$ours" "$by_hand")
	rm -rf "$dir/store"
	rss=$(peak_rss_mib "$ATTACHCTL" upload --quiet --store "$dir/store" "$dir/big.bin")
	row "upload $mib MiB (one pass), RSS $rss MiB" "$t" "$theirs" "<= 1.0, <32MiB"
	rm -rf "$dir/store" "$dir/copy.bin" "$dir/big.bin"

	make_shots "$dir/shots" || return 1
	cat "$dir"/shots/* >/dev/null
	local by_hand_shots="mkdir -p '$dir/copies' && cp '$dir'/shots/*.png '$dir/copies/' && sync '$dir'/copies/* && b3sum '$dir'/copies/*"
	read -r t theirs < <(PREP="rm -rf '$dir/store' '$dir/copies'; sync" upload_pair \
		"'$ATTACHCTL' upload --quiet --each --store '$dir/store' '$dir/shots'" "$by_hand_shots")
	rm -rf "$dir/store"
	rss=$(peak_rss_mib "$ATTACHCTL" upload --quiet --each --store "$dir/store" "$dir/shots")
	row "upload 50 PNGs of 800 KiB, one run, RSS $rss MiB" "$t" "$theirs" "< 0.252 s"
	rm -rf "$dir"
}

upload_bench
