#!/usr/bin/env bash
# Bench section for issue 5 (shrink), sourced by scripts/bench.sh; also runs on its own:
#   bash scripts/bench/shrink.sh
# 30 photo-like JPEGs of 4032x3024 (every third with EXIF orientation 6) and 50 UI-like PNG
# screenshots of 2560x1600, made by scripts/bench/mkimages, shrunk to a 2000 px long edge by:
#   attachctl shrink --jobs 1                   vs  convert IN -auto-orient -resize 2000x2000\> -quality 85 OUT   (goal ratio <= 0.5)
#   attachctl shrink (default --jobs, all CPUs) vs  vipsthumbnail -s 2000 (one process, all files)               (goal ratio <= 1.0)
# Output sizes are printed beside the times. SHRINK_PHOTOS / SHRINK_SHOTS change the counts.
set -euo pipefail
_shrink_repo=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=lib.bash
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

need imagemagick convert
need libvips-tools vipsthumbnail
# ImageMagick itself: /usr/bin/convert when there, not a wrapper earlier on the PATH.
_shrink_convert=$(command -v convert)
[ ! -x /usr/bin/convert ] || _shrink_convert=/usr/bin/convert

SW=$WORK/shrink
mkdir -p "$SW"
(cd "$_shrink_repo" && go run ./scripts/bench/mkimages -out "$SW/in" -photos "${SHRINK_PHOTOS:-30}" -shots "${SHRINK_SHOTS:-50}")
"$ATTACHCTL" sniff --quiet "$SW"/in/* >"$SW/in.jsonl"

# convert_all OUT: ImageMagick, one process per file as people script it.
_shrink_convert_all() {
	local out=$1 f b
	for f in "$SW"/in/*; do
		b=$(basename "$f")
		"$_shrink_convert" "$f" -auto-orient -resize '2000x2000>' -quality 85 "$out/$b"
	done
}
_shrink_vips_all() { vipsthumbnail -s 2000 -o "$1/%s.jpg" "$SW"/in/*; }
_shrink_ours() { "$ATTACHCTL" shrink --quiet --out "$1" --manifest "$SW/in.jsonl" "${@:2}"; }
export -f _shrink_convert_all _shrink_vips_all _shrink_ours
export SW ATTACHCTL _shrink_convert

# sizes DIR: total bytes, photos' and screenshots' mean bytes (by output name).
_shrink_sizes() {
	local dir=$1
	find "$dir" -type f ! -name '.*' -printf '%s %f\n' | awk '
		{ t += $1; c++ }
		END { printf "%d files, %.1f MB total, mean %.0f KB", c, t/1e6, (c ? t/c/1e3 : 0) }'
}

_shrink_fresh() { rm -rf "$SW/out-$1" && mkdir -p "$SW/out-$1"; }
# 3 runs each by default (convert takes minutes); the caller's REPS is restored at the end.
_shrink_saved_reps=${REPS-}
REPS=${SHRINK_REPS:-3}

PREP='_shrink_fresh j1' t_ours1=$(median_time bash -c '_shrink_ours "$SW/out-j1" --jobs 1')
PREP='_shrink_fresh im' t_im=$(median_time bash -c '_shrink_convert_all "$SW/out-im"')
_shrink_what="shrink $(ls "$SW"/in/photo-* | wc -l) photos+$(ls "$SW"/in/shot-* | wc -l) shots"
row "$_shrink_what, --jobs 1 vs convert" "$t_ours1" "$t_im" "<= 0.5"
PREP='_shrink_fresh jn' t_oursn=$(median_time bash -c '_shrink_ours "$SW/out-jn"')
PREP='_shrink_fresh vips' t_vips=$(median_time bash -c '_shrink_vips_all "$SW/out-vips"')
row "$_shrink_what, --jobs $(nproc) vs vipsthumbnail" "$t_oursn" "$t_vips" "<= 1.0"
# second run over the same input and --out: everything reused
unset PREP
t_again=$(median_time bash -c '_shrink_ours "$SW/out-jn"')
row "shrink again, all reused (vs first run)" "$t_again" "$t_oursn" "-"

if [ -n "$_shrink_saved_reps" ]; then REPS=$_shrink_saved_reps; else unset REPS; fi
echo "   output sizes: ours $(_shrink_sizes "$SW/out-jn"); convert $(_shrink_sizes "$SW/out-im"); vipsthumbnail $(_shrink_sizes "$SW/out-vips")"
echo "   ours photos: $(find "$SW/out-jn" -name '*.jpg' -printf '%s\n' | awk '{t+=$1;c++;if($1>m)m=$1} END {printf "%d JPEG, mean %.0f KB, max %.0f KB", c, (c?t/c/1e3:0), m/1e3}')" \
	"screenshots: $(find "$SW/out-jn" -name '*.png' -printf '%s\n' | awk '{t+=$1;c++;if($1>m)m=$1} END {printf "%d PNG, mean %.0f KB, max %.0f KB", c, (c?t/c/1e3:0), m/1e3}')"
