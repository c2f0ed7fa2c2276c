# shellcheck shell=bash
# Section "s3" of scripts/bench.sh: the S3 store against a real S3-compatible server, versitygw
# v1.8.0 on a loopback port (posix backend in a folder under $WORK).
#
#   attachctl upload --jobs 4 BIG into s3://bench/up   vs  aws s3 cp BIG (awscli, its defaults)
#                                                       vs  rclone copyto BIG (its defaults)
#                                                       goal: <= 1.0x the faster of the two,
#                                                             peak RSS <= 96 MiB
#   attachctl resolve of the 50 screenshots from the S3 store, working copies fetched
#                                                       vs  aws s3 cp --recursive of the same
#                                                           50 objects into a folder
#                                                       goal: ratio <= 0.5
#   the same resolve with the copies reused, and       vs  the same resolve on a local store
#   attachctl upload of a folder of 3,000 small files   vs  aws s3 cp --recursive of the folder
#   (13 MB) into s3://bench/tree, as one upload                 goal: ratio <= 1.0
#   attachctl prepare --resolve --workdir of it         vs  aws s3 cp --recursive back out
#   (the tree fetched into a fresh work folder)                 goal: ratio <= 1.5
#
# BIG is a 2 GiB file of random bytes (BENCH_S3_MIB to change it), in the page cache for every
# side; each tool runs once (REPS_S3, default 1: the machine is shared and a run moves 2 GiB). `upload BIG` given as a path sniffs it first (one read that hashes it: the BLAKE3 goes
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
	# awscli and rclone, configured for the same server in files of their own.
	need aws aws
	need rclone rclone
	printf '[default]\ns3 =\n    addressing_style = path\n' >"$dir/aws.config"
	export AWS_CONFIG_FILE=$dir/aws.config AWS_SHARED_CREDENTIALS_FILE=/dev/null
	export RCLONE_CONFIG_GW_TYPE=s3 RCLONE_CONFIG_GW_PROVIDER=Other RCLONE_CONFIG_GW_ENDPOINT=$AWS_ENDPOINT_URL_S3 \
		RCLONE_CONFIG_GW_ACCESS_KEY_ID=bench RCLONE_CONFIG_GW_SECRET_ACCESS_KEY=bench-secret RCLONE_CONFIG_GW_REGION=us-east-1 \
		RCLONE_S3_NO_CHECK_BUCKET=true # the bucket is there; versitygw answers rclone's bucket creation with a 500
	local reps=${REPS_S3:-1} prep="_s3_clear '$dir/gw/bench/up' '$dir/gw/bench/aws' '$dir/gw/bench/rc' '$dir/gw/bench/.sgwtmp'; sync"
	local ours aws rc
	ours=$(REPS=$reps PREP=$prep median_time "$ATTACHCTL" upload --quiet --jobs 4 --store s3://bench/up "$dir/big.bin")
	aws=$(REPS=$reps PREP=$prep median_time aws s3 cp --only-show-errors "$dir/big.bin" s3://bench/aws/big.bin)
	# rclone refuses a custom CA bundle (AWS_CA_BUNDLE, set on some machines) for its transport;
	# the endpoint is plain http on loopback, so it needs none.
	rc=$(REPS=$reps PREP=$prep median_time env -u AWS_CA_BUNDLE rclone copyto "$dir/big.bin" gw:bench/rc/big.bin)
	[ -s "$dir/gw/bench/rc/big.bin" ] || { echo "bench s3: rclone copyto did not upload" >&2; return 1; }
	eval "$prep"
	rss=$(peak_rss_mib "$ATTACHCTL" upload --quiet --jobs 4 --store s3://bench/up "$dir/big.bin")
	theirs=$(awk -v a="$aws" -v b="$rc" 'BEGIN { print (a < b ? a : b) }')
	row "s3: upload $mib MiB, 4 jobs, RSS $rss MiB, vs aws" "$ours" "$aws" "<= 1.0"
	row "s3: upload $mib MiB, vs rclone copyto" "$ours" "$rc" "<= 1.0"
	row "s3: upload $mib MiB, vs the faster" "$ours" "$theirs" "<= 1.0, <=96MiB"
	eval "$prep"
	rm -f "$dir/big.bin"

	make_shots "$dir/shots" || return 1
	"$ATTACHCTL" sniff --each "$dir/shots" >"$dir/shots.jsonl" || return 1
	"$ATTACHCTL" upload --quiet --store "$dir/local" --manifest "$dir/shots.jsonl" |
		"$ATTACHCTL" prompt --session s1 --text 'What changed?' >"$dir/local.json" || return 1
	"$ATTACHCTL" upload --quiet --store s3://bench/chat --manifest "$dir/shots.jsonl" |
		"$ATTACHCTL" prompt --session s1 --text 'What changed?' >"$dir/s3.json" || return 1
	local local_t cold warm awsr
	local_t=$(median_time "$ATTACHCTL" resolve --store "$dir/local" "$dir/local.json")
	cold=$(PREP="rm -rf '$dir/work'" median_time "$ATTACHCTL" resolve --store s3://bench/chat --workdir "$dir/work" "$dir/s3.json")
	awsr=$(PREP="rm -rf '$dir/awscopy'" median_time aws s3 cp --recursive --only-show-errors --exclude '.attachctl/*' --exclude '*/.used' s3://bench/chat "$dir/awscopy")
	warm=$(median_time "$ATTACHCTL" resolve --store s3://bench/chat --workdir "$dir/work" "$dir/s3.json")
	rss=$(peak_rss_mib "$ATTACHCTL" resolve --store s3://bench/chat --workdir "$dir/work" "$dir/s3.json")
	row "s3: resolve 50 shots, copies fetched, vs aws" "$cold" "$awsr" "<= 0.5"
	row "s3: resolve 50 shots, copies reused, RSS $rss MiB" "$warm" "$local_t" "<= 3"

	# A folder of 3,000 small files (the folder section's tree): one upload, the files sent 16 at
	# once, the listing last; the AWS CLI sends the same files (10 at once, its default).
	small_tree "$dir/tree" || return 1
	local treeprep="_s3_clear '$dir/gw/bench/tree' '$dir/gw/bench/awstree' '$dir/gw/bench/.sgwtmp'; sync"
	local tree_up tree_aws tree_res tree_awsget
	tree_up=$(REPS=3 PREP=$treeprep median_time "$ATTACHCTL" upload --quiet --store s3://bench/tree "$dir/tree")
	tree_aws=$(REPS=3 PREP=$treeprep median_time aws s3 cp --recursive --only-show-errors "$dir/tree" s3://bench/awstree/tree)
	row "s3: upload a 3,000-file folder (13 MB), vs aws cp -r" "$tree_up" "$tree_aws" "<= 1.0"
	eval "$treeprep"
	"$ATTACHCTL" upload --quiet --store s3://bench/tree "$dir/tree" >/dev/null || return 1
	aws s3 cp --recursive --only-show-errors "$dir/tree" s3://bench/awstree/tree || return 1
	tree_res=$(REPS=3 PREP="rm -rf '$dir/treework'" median_time "$ATTACHCTL" prepare --store s3://bench/tree --resolve --workdir "$dir/treework" --text 'review' "$dir/tree")
	tree_awsget=$(REPS=3 PREP="rm -rf '$dir/awstreecopy'" median_time aws s3 cp --recursive --only-show-errors s3://bench/awstree/tree "$dir/awstreecopy")
	row "s3: prepare --resolve of it, tree fetched, vs aws cp -r" "$tree_res" "$tree_awsget" "<= 1.5"

	kill "$pid"
	wait "$pid" 2>/dev/null
	rm -rf "$dir"
}

# _s3_clear PATH...: rm -rf of the server's folders, tried again while it fails: versitygw may
# still be removing a finished multipart upload's staging folder after it answered, and a removal
# that meets it fails with "Directory not empty".
_s3_clear() {
	local i
	for ((i = 0; i < 100; i++)); do
		rm -rf "$@" 2>/dev/null && return 0
		sleep 0.1 # waiting for the server to finish its own removal, not ordering events
	done
	rm -rf "$@"
}

s3_bench
