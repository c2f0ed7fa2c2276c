# verify --all over a store of about 2 GiB in 200 files against b3sum of the same files; and the
# Go benchmark of verify's per-core rate against zeebo/blake3 in memory.
# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
bench_verify() {
	need b3sum b3sum
	local store=$WORK/verify-store
	rm -rf "$store" "$WORK/verify-src" && mkdir -p "$WORK/verify-src"
	local i
	for i in $(seq 1 200); do
		head -c $((10 * 1024 * 1024)) /dev/urandom >"$WORK/verify-src/f$i.bin"
	done
	"$ATTACHCTL" upload --quiet --each --store "$store" "$WORK/verify-src" >/dev/null
	rm -rf "$WORK/verify-src"
	local files ours theirs
	ours=$(median_time "$ATTACHCTL" verify --quiet --store "$store" --all)
	files=("$store"/*/f*.bin)
	theirs=$(median_time b3sum "${files[@]}")
	row "verify --all: 2 GiB in 200 files (vs b3sum)" "$ours" "$theirs" "<= 2.0"
	rm -rf "$store"
	echo
	echo "Go benchmark (one core): verify of one upload vs zeebo/blake3 in memory, MB/s:"
	go test ./ops/store/internal/local -run '^$' -bench 'VerifyUpload|Blake3InMemory' -benchtime 5x -cpu 1 | grep -E '^Benchmark'
}
bench_verify
