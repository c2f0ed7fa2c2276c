# shellcheck shell=bash
# Section "docs" of scripts/bench.sh: documents on resolve (docs/resolve.md, "Documents").
# DOCS_N text PDFs (default 30) of DOCS_PAGES pages of prose (default 10) and as many scanned
# (image-only) PDFs, made by scripts/bench/mkdocs (scripts/docgen), uploaded as they are:
#
#   resolve --agent claude-agent-acp of the text PDFs, cache cold  vs  pdftotext of each   goal: <= 3
#   resolve --agent claude-agent-acp of the scans, cache cold      vs  pdftoppm -r 100      goal: <= 3
#        (--doc-pages DOCS_RENDER, default 2: ours renders each page at 1568 px, its long
#        edge for Anthropic, and encodes PNG; pdftoppm -r 100 -png the same pages, 850x1100)
#   a second resolve of images + all the PDFs (cache warm)  vs  the same prompt, documents by path
#        (--doc-max 1 --doc-pages 0: resolve as it was before documents were delivered)  goal: <= 1.2
#        in wall time, the two taken in turns, and again in CPU seconds (user + system, all
#        threads), which a machine loaded by other work changes far less than wall time
#
# pdftotext and pdftoppm are poppler-utils: one process a document on their side, as a script
# would run them; ours is one resolve of the whole prompt, which also writes the prompt. The cold
# runs each start from an empty shrink cache (PREP, untimed), where the documents' text and pages
# are kept; pdfium's compiled code (attachctl/wasm, beside it) stays, as it does for a user after
# the first run. DOCS_N and DOCS_PAGES change the size;
# REPS=1 DOCS_N=3 checks that the section runs.
#
# Sourced by scripts/bench.sh, which provides $ATTACHCTL, $WORK, median_time, row and need. Also
# runs standalone (`bash scripts/bench/docs.sh`).

# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

docs_bench() {
	local dir=$WORK/docs n=${DOCS_N:-30} pages=${DOCS_PAGES:-10} render=${DOCS_RENDER:-2} text scan ptext pscan warm alone counts
	need poppler-utils pdftotext || true
	need time /usr/bin/time || true
	if ! command -v pdftotext >/dev/null || ! command -v pdftoppm >/dev/null; then
		echo "docs: pdftotext and pdftoppm are missing: install poppler-utils (apt-get install poppler-utils)" >&2
		return 1
	fi
	rm -rf "$dir"
	mkdir -p "$dir/ppm"
	(cd "$REPO" && go run ./scripts/bench/mkdocs -out "$dir" -n "$n" -pages "$pages") || return 1
	(cd "$REPO" && go run ./scripts/bench/mkimages -out "$dir/shots" -photos 0 -shots 5 -shot-size 1200) || return 1
	docs_prompt() { # NAME FILES...: a prompt of FILES from their own store
		local name=$1
		shift
		"$ATTACHCTL" prepare --quiet --store "$dir/store-$name" --out "$dir/prepcache" --max-edge 4000 \
			--max-bytes 100000000 --text 'What do these say?' "$@" >"$dir/$name.json"
	}
	docs_prompt text "$dir"/text/*.pdf || return 1
	docs_prompt scan "$dir"/scan/*.pdf || return 1
	docs_prompt mixed "$dir"/shots/* "$dir"/text/*.pdf "$dir"/scan/*.pdf || return 1
	docs_resolve() { # NAME FLAGS...
		local name=$1
		shift
		env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --quiet --store "$dir/store-$name" \
			--agent claude-agent-acp --doc-max 100000000 --doc-pages "$render" "$@" "$dir/$name.json"
	}
	# Sanity: every text PDF's text in the prompt, every scan's pages inline.
	counts=$(docs_resolve text --explain 2>&1 >/dev/null | grep -c "document text, $pages of $pages pages" || true)
	[ "$counts" = "$n" ] || { echo "docs: $counts of $n text PDFs went as their text" >&2; return 1; }
	counts=$(docs_resolve scan --explain 2>&1 >/dev/null | grep -c ": inline image" || true)
	[ "$counts" = $((n * render)) ] || { echo "docs: $counts of $((n * render)) scanned pages went inline" >&2; return 1; }
	text=$(PREP="rm -rf '$dir/cache/attachctl/shrink'" median_time env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --quiet \
		--store "$dir/store-text" --agent claude-agent-acp --doc-max 100000000 "$dir/text.json")
	ptext=$(median_time bash -c 'for f in "$@"; do pdftotext "$f" - ; done' _ "$dir"/text/*.pdf)
	scan=$(PREP="rm -rf '$dir/cache/attachctl/shrink'" median_time env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --quiet \
		--store "$dir/store-scan" --agent claude-agent-acp --doc-pages "$render" "$dir/scan.json")
	pscan=$(PREP="rm -f '$dir'/ppm/*" median_time bash -c 'r=$1; o=$2; shift 2; for f in "$@"; do pdftoppm -r 100 -png -l "$r" "$f" "$o/$(basename "$f" .pdf)"; done' _ "$render" "$dir/ppm" "$dir"/scan/*.pdf)
	docs_resolve mixed >/dev/null
	local w=(env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --quiet --store "$dir/store-mixed"
		--agent claude-agent-acp --doc-max 100000000 --doc-pages "$render" "$dir/mixed.json")
	local a=(env XDG_CACHE_HOME="$dir/cache" "$ATTACHCTL" resolve --quiet --store "$dir/store-mixed"
		--agent claude-agent-acp --doc-max 1 --doc-pages 0 "$dir/mixed.json")
	read -r warm alone wcpu acpu < <(docs_turns "${w[*]@Q}" "${a[*]@Q}")
	row "resolve text of $n PDFs x $pages pages, cache cold" "$text" "$ptext" "<= 3"
	row "resolve $n scans, $render pages each rendered, cache cold" "$scan" "$pscan" "<= 3"
	row "resolve 5 shots + $((2 * n)) PDFs warm vs documents by path" "$warm" "$alone" "<= 1.2"
	row "  the same, CPU seconds (user + system)" "$wcpu" "$acpu" "<= 1.2"
}

# docs_turns A B: runs the shell commands A and B in turns, REPS times each (default 9, after one
# untimed run of each), and prints the median wall seconds of A and of B, then their median CPU
# seconds (user + system of the process and its threads).
docs_turns() {
	local reps=${REPS:-9} i wa=() wb=() ca=() cb=() t
	docs_med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	eval "$1" >/dev/null 2>&1
	eval "$2" >/dev/null 2>&1
	for ((i = 0; i < reps; i++)); do
		t=$(/usr/bin/time -f '%e %U %S' bash -c "$1" 2>&1 >/dev/null | tail -n 1)
		wa+=("$(echo "$t" | awk '{print $1}')") ca+=("$(echo "$t" | awk '{print $2 + $3}')")
		t=$(/usr/bin/time -f '%e %U %S' bash -c "$2" 2>&1 >/dev/null | tail -n 1)
		wb+=("$(echo "$t" | awk '{print $1}')") cb+=("$(echo "$t" | awk '{print $2 + $3}')")
	done
	echo "$(docs_med "${wa[@]}") $(docs_med "${wb[@]}") $(docs_med "${ca[@]}") $(docs_med "${cb[@]}")"
}

docs_bench
