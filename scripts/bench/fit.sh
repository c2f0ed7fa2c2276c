# shellcheck shell=bash
# Section "fit" of scripts/bench.sh: shrink to fit on resolve. 25 UI-like screenshots of
# 4000x2500 (PNG, made by scripts/bench/mkimages), uploaded as they are; a prompt of more than 20
# images holds Anthropic to 2000 px a side, so `resolve --agent claude-agent-acp` shrinks each to
# 2000x1250 into the shrink cache and sends all 25 inline:
#
#   resolve --agent claude-agent-acp, cache cold   vs  vipsthumbnail -s 2000 of the same files  goal: <= 1.0
#   resolve --agent claude-agent-acp, cache warm   vs  vipsthumbnail -s 2000                    goal: < 0.2
#   resolve --agent claude-agent-acp, cache warm   vs  resolve --no-shrink (today's: by path)   goal: < 3
#
# vipsthumbnail is one process over all 25 files, writing JPEGs; ours also encodes them as the
# shrink package does (PNG for flat screenshots) and writes the whole prompt, base64 and all. The
# cold runs each start from an empty cache (PREP, untimed); the warm ones reuse it, so they only
# hash, check and stream the cached copies. --no-shrink is resolve as it was before shrinking to
# fit: every image over the limit goes by path. FIT_SHOTS changes the count.
#
# Sourced by scripts/bench.sh, which provides $ATTACHCTL, $WORK, median_time, row and need. Also
# runs standalone (`bash scripts/bench/fit.sh`).

# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

fit_bench() {
	local dir=$WORK/fit n=${FIT_SHOTS:-25} counts cold warm vips today
	need libvips-tools vipsthumbnail
	rm -rf "$dir"
	mkdir -p "$dir/vips"
	(cd "$REPO" && go run ./scripts/bench/mkimages -out "$dir/shots" -photos 0 -shots "$n" -shot-size 4000) || return 1
	# Uploaded as they are: within --max-edge and --max-bytes, prepare keeps every file.
	"$ATTACHCTL" prepare --quiet --each --store "$dir/store" --out "$dir/prepcache" --max-edge 4000 --max-bytes 100000000 \
		--text 'What changed between these?' "$dir/shots" >"$dir/prompt.json" || return 1
	fit_resolve() { env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --store "$dir/store" --agent claude-agent-acp "$@" "$dir/prompt.json"; }
	# Sanity: every image inline, each shrunk.
	counts=$(fit_resolve --progress always 2>&1 >/dev/null)
	case $counts in
	*"$n inline images, 0 inline audio, 0 embedded, 0 by path"*) ;;
	*) echo "fit: unexpected result: $counts" >&2; return 1 ;;
	esac
	cold=$(PREP="rm -rf '$dir/cache'" median_time env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --quiet \
		--store "$dir/store" --agent claude-agent-acp "$dir/prompt.json")
	fit_resolve --quiet >/dev/null
	warm=$(median_time env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --quiet --store "$dir/store" \
		--agent claude-agent-acp "$dir/prompt.json")
	today=$(median_time "$ATTACHCTL" resolve --quiet --store "$dir/store" --agent claude-agent-acp --no-shrink "$dir/prompt.json")
	vips=$(PREP="rm -f '$dir'/vips/*" median_time vipsthumbnail -s 2000 -o "$dir/vips/%s.jpg" "$dir"/shots/*)
	row "resolve --agent claude $n shots 4000x2500, cache cold" "$cold" "$vips" "<= 1.0"
	row "resolve --agent claude $n shots 4000x2500, cache warm" "$warm" "$vips" "< 0.2"
	row "resolve, cache warm vs --no-shrink (today: by path)" "$warm" "$today" "< 3"
}

fit_bench
