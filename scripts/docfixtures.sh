#!/usr/bin/env bash
# Makes the PDFs of shrink/doc/testdata with ghostscript (gs): a 3-page PDF with a text layer, a
# 2-page image-only "scanned" PDF (pages drawn by gs, kept as JPEGs), and an encrypted PDF. They
# are kept in the repository (a few KB), so the tests need no tool; run this to make them again.
# The sentences are what the tests look for.
set -euo pipefail
out=${1:-"$(dirname "$0")/../shrink/doc/testdata"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v gs >/dev/null || { echo "docfixtures: needs ghostscript (gs)" >&2; exit 1; }

cat >"$tmp/text.ps" <<'PS'
%!PS
/Helvetica findfont 14 scalefont setfont
72 700 moveto (Page one says the heron waits by the cold river.) show showpage
72 700 moveto (Page two says the lantern burns until dawn.) show showpage
72 700 moveto (Page three says the orchard keeps its secrets.) show showpage
PS
cat >"$tmp/scan.ps" <<'PS'
%!PS
/Helvetica findfont 28 scalefont setfont
72 700 moveto (A scanned page about the silver fox.) show showpage
72 700 moveto (A second scanned page about the tide.) show showpage
PS
gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -o "$out/text3.pdf" "$tmp/text.ps"
gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -sOwnerPassword=owner -sUserPassword=secret \
	-o "$out/encrypted.pdf" "$tmp/text.ps"
# The scan: each page drawn to a 40 dpi grey JPEG, then the JPEGs placed as the only content of
# a PDF's pages (ImageMagick's PDF writer is often disabled by its security policy).
gs -q -dNOPAUSE -dBATCH -sDEVICE=jpeggray -r40 -dJPEGQ=60 -o "$tmp/scan-%d.jpg" "$tmp/scan.ps"
place='<< /PageSize 2 index viewJPEGgetsize 2 array astore >> setpagedevice viewJPEG showpage'
(cd "$tmp" && gs -q -dNOPAUSE -dBATCH -dNOSAFER -sDEVICE=pdfwrite -o scan2.pdf viewjpeg.ps \
	-c "(scan-1.jpg) $place (scan-2.jpg) $place")
cp "$tmp/scan2.pdf" "$out/scan2.pdf"
