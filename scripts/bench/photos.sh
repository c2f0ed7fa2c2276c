#!/usr/bin/env bash
# Bench section for issue 13 (photos), sourced by scripts/bench.sh; also runs on its own:
#   bash scripts/bench/photos.sh
# Photos alone, no screenshots, shrunk to a 2000 px long edge:
#   30 photo-like JPEGs of 4032x3024 (scripts/bench/mkimages; every third with EXIF orientation 6)
#     attachctl shrink --jobs 2  vs  vipsthumbnail -s 2000 (one process, all files)       goal <= 1.0
#     attachctl shrink --jobs 1  vs  convert IN -auto-orient -resize 2000x2000\> -quality 85 OUT  goal <= 0.4
#   4 HEICs of 12 MP (heif-enc -q 80 of the first photos)
#     attachctl shrink (default --jobs), compiled-decoder cache empty (cold), then filled (warm)
#       vs  heif-convert -q 95 IN TMP.jpg; vipsthumbnail -s 2000 TMP.jpg, per file        goal <= 1.0 cold and warm
#   peak RSS of attachctl shrink --jobs 8 over eight 8000x6000 progressive JPEGs and the HEICs,
#   default --max-memory (1 GiB)                                                         goal < 1.2 GiB
# The two sides of each comparison take turns (turns_times), wall medians of the runs.
# PHOTOS_N, PHOTOS_HEIC, PHOTOS_BIG change the counts; PHOTOS_REPS the runs (default 3),
# PHOTOS_HEIC_REPS those of the HEIC rows (default 5).
set -euo pipefail
_photos_repo=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

need imagemagick convert
need libvips-tools vipsthumbnail
need libheif-examples heif-enc
need time /usr/bin/time
_photos_convert=$(command -v convert)
[ ! -x /usr/bin/convert ] || _photos_convert=/usr/bin/convert

PH=$WORK/photos
mkdir -p "$PH"
_photos_n=${PHOTOS_N:-30}
_photos_heic=${PHOTOS_HEIC:-4}
_photos_big=${PHOTOS_BIG:-8}
# Inputs are made once: a kept $BENCH_WORK (BENCH_KEEP=1) reuses them, as heif-enc is slow.
[ -e "$PH/in/.done" ] || {
	(cd "$_photos_repo" && go run ./scripts/bench/mkimages -out "$PH/in" -photos "$_photos_n" -shots 0)
	touch "$PH/in/.done"
}
mkdir -p "$PH/heic" "$PH/big"
for ((i = 0; i < _photos_heic; i++)); do
	f=$(printf '%s/in/photo-%02d.jpg' "$PH" "$i")
	[ -e "$PH/heic/photo-$i.heic" ] || heif-enc -q 80 -o "$PH/heic/photo-$i.heic" "$f" >/dev/null
done
[ -e "$PH/big/.done" ] || {
	(cd "$_photos_repo" && go run ./scripts/bench/mkimages -out "$PH/big-base" -photos "$_photos_big" -shots 0 -photo-size 8000)
	for f in "$PH"/big-base/*.jpg; do
		"$_photos_convert" "$f" -interlace Plane -quality 90 "$PH/big/$(basename "$f")"
	done
	rm -rf "$PH/big-base"
	touch "$PH/big/.done"
}

_photos_fresh() { rm -rf "$PH/out-$1" && mkdir -p "$PH/out-$1"; }
_photos_ours() { "$ATTACHCTL" shrink --quiet --out "$1" "${@:2}" >/dev/null; }
_photos_vips() { vipsthumbnail -s 2000 -o "$1/%s.jpg" "$PH"/in/*; }
_photos_convert_all() {
	local f
	for f in "$PH"/in/*; do
		"$_photos_convert" "$f" -auto-orient -resize '2000x2000>' -quality 85 "$1/$(basename "$f")"
	done
}
_photos_heif_vips() {
	local f b
	for f in "$PH"/heic/*; do
		b=$(basename "$f" .heic)
		heif-convert -q 95 "$f" "$1/$b.full.jpg" >/dev/null
		# %s is the input's name without its extension ("photo-0.full"): an output named
		# "%s.jpg" would be the input itself, which vipsthumbnail then fails to read.
		vipsthumbnail -s 2000 -o "$1/%s.thumb.jpg" "$1/$b.full.jpg"
	done
}
# _photos_made DIR N GLOB: fails the bench unless the last timed run left N outputs: median_time
# discards a command's errors, and a tool that failed would time as fast.
_photos_made() {
	local n
	n=$(find "$1" -name "$3" -size +0 | wc -l)
	[ "$n" -eq "$2" ] || { echo "photos.sh: $1 holds $n files $3, not $2: a timed run failed" >&2; exit 1; }
}
export -f _photos_fresh _photos_ours _photos_vips _photos_convert_all _photos_heif_vips
export PH ATTACHCTL _photos_convert

_photos_saved_reps=${REPS-}
REPS=${PHOTOS_REPS:-3}

# Each comparison takes turns, so that a change in the machine's speed during the section moves
# both sides alike.
read -r t_j2 t_vips < <(turns_times '_photos_fresh j2' '_photos_ours "$PH/out-j2" --jobs 2 "$PH"/in/*' \
	'_photos_fresh vips' '_photos_vips "$PH/out-vips"')
row "shrink $_photos_n photos, --jobs 2 vs vipsthumbnail" "$t_j2" "$t_vips" "<= 1.0"
read -r t_j1 t_im < <(turns_times '_photos_fresh j1' '_photos_ours "$PH/out-j1" --jobs 1 "$PH"/in/*' \
	'_photos_fresh im' '_photos_convert_all "$PH/out-im"')
row "shrink $_photos_n photos, --jobs 1 vs convert" "$t_j1" "$t_im" "<= 0.4"

# HEIC: cold is a fresh cache folder for the compiled decoder, warm the one the runs filled. Five
# turns (PHOTOS_HEIC_REPS) where the photo rows take three: the three commands are a few seconds
# each, and their medians move by a tenth between sections of three.
read -r t_cold t_warm t_hv < <(REPS=${PHOTOS_HEIC_REPS:-5} XDG_CACHE_HOME=$PH/xdg turns_times \
	'_photos_fresh hc; rm -rf "$PH/xdg"' '_photos_ours "$PH/out-hc" "$PH"/heic/*' \
	'_photos_fresh hw' '_photos_ours "$PH/out-hw" "$PH"/heic/*' \
	'_photos_fresh hv' '_photos_heif_vips "$PH/out-hv"')
_photos_made "$PH/out-hw" "$_photos_heic" '*.jpg'
_photos_made "$PH/out-hv" "$_photos_heic" '*.thumb.jpg'
row "shrink $_photos_heic HEICs, cold, vs heif-convert+vipsthumbnail" "$t_cold" "$t_hv" "<= 1.0"
row "shrink $_photos_heic HEICs, warm, vs heif-convert+vipsthumbnail" "$t_warm" "$t_hv" "<= 1.0"

_photos_fresh rss
rss=$(XDG_CACHE_HOME=$PH/xdg peak_rss_mib "$ATTACHCTL" shrink --quiet --jobs 8 --out "$PH/out-rss" "$PH"/big/* "$PH"/heic/*)
printf '| %-52s | %7s MiB | %7s MiB | %7s | %-12s |\n' "peak RSS, --jobs 8: $_photos_big 8000x6000 prog. + $_photos_heic HEIC" "$rss" "1228.8" \
	"$(awk -v a="$rss" 'BEGIN { printf "%.3f", a/1228.8 }')" "< 1.0"

if [ -n "$_photos_saved_reps" ]; then REPS=$_photos_saved_reps; else unset REPS; fi
echo "   photo output: ours $(find "$PH/out-j2" -name '*.jpg' -printf '%s\n' | awk '{t+=$1;c++} END {printf "%d JPEG, mean %.0f KB", c, (c?t/c/1e3:0)}');" \
	"vipsthumbnail $(find "$PH/out-vips" -name '*.jpg' -printf '%s\n' | awk '{t+=$1;c++} END {printf "%d JPEG, mean %.0f KB", c, (c?t/c/1e3:0)}')"
