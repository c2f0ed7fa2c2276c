# shellcheck shell=bash
# Section "s3" of scripts/bench.sh: the S3 store against a real S3-compatible server, versitygw
# v1.8.0 on a loopback port (posix backend in a folder under $WORK).
#
#   attachctl upload --jobs 4 BIG into s3://bench/up   vs  cp BIG into the server's own folder
#                                                           and sync it
#                                                       goal: ratio <= 1.5, peak RSS <= 96 MiB
#   attachctl resolve of the 50 screenshots from the S3 store (working copies: first run fetches,
#   later runs reuse)                                   vs  the same resolve on a local store
#                                                       goal: ratio <= 3
#
# BIG is a 2 GiB file of random bytes (BENCH_S3_MIB to change it), in the page cache for both
# sides. `upload BIG` given as a path sniffs it first (one read that hashes it: the BLAKE3 goes
# into the object's metadata at the multipart upload's start) and then sends it in parts of
# 8 MiB, 4 at once, each run into a fresh prefix (untimed cleanup between runs). The screenshots
# are the resolve section's 50 PNGs of 819,200 bytes; the prompts of both stores name the same
# files. The first resolve from S3 (copies fetched) is one run; the warm row is the median.
#
# Sourced by scripts/bench.sh, which provides $ATTACHCTL, $WORK, median_time, peak_rss_mib, row and
# need. Also runs standalone (`bash scripts/bench/s3.sh`).

# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

s3_bench() {
	local dir=$WORK/s3 mib=${BENCH_S3_MIB:-2048} t theirs rss port pid i
	rm -rf "$dir"
	mkdir -p "$dir/gw/bench"
	export PATH=$PATH:$(go env GOPATH)/bin
	if ! command -v versitygw >/dev/null 2>&1; then
		go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 || return 1
	fi
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	versitygw --access bench --secret bench-secret --region us-east-1 --port "127.0.0.1:$port" --quiet --keep-alive \
		posix "$dir/gw" >"$dir/gw.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.05 # waiting for the server to answer, not ordering events
	done
	export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=bench \
		AWS_SECRET_ACCESS_KEY=bench-secret AWS_EC2_METADATA_DISABLED=true ATTACHCTL_S3_PATH_STYLE=1

	head -c "$((mib << 20))" /dev/urandom >"$dir/big.bin" || return 1
	cat "$dir/big.bin" >/dev/null
	local n=0
	local ours="'$ATTACHCTL' upload --quiet --jobs 4 --store s3://bench/up '$dir/big.bin'"
	local by_hand="mkdir -p '$dir/gw/bench/copy' && cp '$dir/big.bin' '$dir/gw/bench/copy/big.bin' && sync '$dir/gw/bench/copy/big.bin'"
	local prep="rm -rf '$dir/gw/bench/up' '$dir/gw/bench/copy' '$dir/gw/bench/.sgwtmp'; sync"
	read -r t theirs < <(PREP=$prep upload_pair "$ours" "$by_hand")
	eval "$prep"
	rss=$(peak_rss_mib "$ATTACHCTL" upload --quiet --jobs 4 --store s3://bench/up "$dir/big.bin")
	row "s3: upload $mib MiB, 4 jobs, RSS $rss MiB" "$t" "$theirs" "<= 1.5, <=96MiB"
	eval "$prep"
	rm -f "$dir/big.bin"

	make_shots "$dir/shots" || return 1
	"$ATTACHCTL" sniff "$dir/shots" >"$dir/shots.jsonl" || return 1
	"$ATTACHCTL" upload --quiet --store "$dir/local" --manifest "$dir/shots.jsonl" |
		"$ATTACHCTL" prompt --session s1 --text 'What changed?' >"$dir/local.json" || return 1
	"$ATTACHCTL" upload --quiet --store s3://bench/chat --manifest "$dir/shots.jsonl" |
		"$ATTACHCTL" prompt --session s1 --text 'What changed?' >"$dir/s3.json" || return 1
	local local_t cold warm
	local_t=$(median_time "$ATTACHCTL" resolve --store "$dir/local" "$dir/local.json")
	cold=$(REPS=1 PREP="rm -rf '$dir/work'" median_time "$ATTACHCTL" resolve --store s3://bench/chat --workdir "$dir/work" "$dir/s3.json")
	warm=$(median_time "$ATTACHCTL" resolve --store s3://bench/chat --workdir "$dir/work" "$dir/s3.json")
	rss=$(peak_rss_mib "$ATTACHCTL" resolve --store s3://bench/chat --workdir "$dir/work" "$dir/s3.json")
	row "s3: resolve 50 shots, copies fetched" "$cold" "$local_t" "<= 3"
	row "s3: resolve 50 shots, copies reused, RSS $rss MiB" "$warm" "$local_t" "<= 3"

	kill "$pid"
	wait "$pid" 2>/dev/null
	rm -rf "$dir"
}

s3_bench
