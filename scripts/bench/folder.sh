# shellcheck shell=bash
# Section "folder" of scripts/bench.sh: a folder of 3,000 small files (13 MB, 30 folders of 100,
# sizes 2 to 6.7 KB, random bytes) attached as one folder, against copying it by hand.
#
#   attachctl upload DIR          vs  cp -r DIR COPY && sync     goal: ratio <= 2.0
#   attachctl upload --each DIR   vs  cp -r DIR COPY && sync     goal: ratio <= 2.0
#   attachctl prepare --resolve DIR (fresh store)                goal: < 1 s
#   attachctl prepare DIR: the prompt's bytes (not seconds)      goal: < 1 KB
#
# `upload DIR` is one folder upload (one id, the tree under STORE/<id>/DIR/, one commit);
# `--each` is one upload per file (3,000 ids), committed in batches. Both read each file once and
# end with every byte durable and hashed, as `cp -r` then `sync` ends with the bytes durable (and
# not hashed). The sides take turns, each from an empty store or no copy, the tree in the page cache.
#
# Figures: BENCHMARKS.md, and README.md (Folders).
#
# Sourced by scripts/bench.sh, which provides $ATTACHCTL, $WORK, median_time, row, upload_pair and
# need. Also runs standalone (`bash scripts/bench/folder.sh`).

# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

folder_bench() {
	local dir=$WORK/folder t theirs bytes
	rm -rf "$dir"
	mkdir -p "$dir"
	need python3 python3
	python3 - "$dir/src" <<'PY' || return 1
import os, random, sys
random.seed(19)
root = sys.argv[1]
for i in range(3000):
    d = os.path.join(root, "d%02d" % (i % 30), "s%d" % (i % 7))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d.txt" % i), "wb") as f:
        f.write(os.urandom(random.randint(2000, 6700)))
PY
	cat "$dir"/src/*/*/* >/dev/null
	local by_hand="cp -r '$dir/src' '$dir/copy' && sync"
	local prep="rm -rf '$dir/store' '$dir/copy'; sync"
	read -r t theirs < <(PREP=$prep upload_pair "'$ATTACHCTL' upload --quiet --store '$dir/store' '$dir/src'" "$by_hand")
	row "upload 3,000 small files (13 MB) as one folder" "$t" "$theirs" "<= 2.0"
	read -r t theirs < <(PREP=$prep upload_pair "'$ATTACHCTL' upload --quiet --each --store '$dir/store' '$dir/src'" "$by_hand")
	row "upload 3,000 small files (13 MB), --each" "$t" "$theirs" "<= 2.0"
	t=$(PREP="rm -rf '$dir/store'; sync" median_time "$ATTACHCTL" prepare --quiet --store "$dir/store" --resolve --text review "$dir/src")
	row "prepare --resolve of the 3,000-file folder (fresh store)" "$t" 1.000 "< 1 s"
	rm -rf "$dir/store"
	bytes=$("$ATTACHCTL" prepare --quiet --store "$dir/store" --text review "$dir/src" | wc -c)
	row "prompt of the 3,000-file folder, in KB (not s)" "$(awk -v b="$bytes" 'BEGIN { printf "%.3f", b/1000 }')" 1.000 "< 1 KB"
	rm -rf "$dir"
}

folder_bench
