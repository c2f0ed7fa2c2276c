#!/usr/bin/env bash
# Builds shrink/internal/heif/heif.wasm.gz, the HEIC decoder that shrink runs in wazero:
#
#   scripts/wasm/heif.sh [-o OUT.wasm.gz] [-k WORKDIR]
#
# from Debian bookworm's own packages only: the sources of libde265 and libheif come from
# `apt-get source` (Debian's tarballs with Debian's patches, security fixes included), the
# toolchain (clang, wasm-ld, wasi-libc, libc++ for wasm32) from `apt-get install`. On top of them:
# scripts/wasm/patches (see the comments in them), scripts/wasm/include (libde265 includes
# pthread.h, which wasi-libc lacks, and signal.h, which it refuses), scripts/wasm/bulkmem.c
# (memcpy and memset as bulk-memory instructions), and our C glue,
# shrink/internal/heif/heif.c.txt, which exports decode (with malloc and free, and the memory) as
# shrink/internal/heif/heif.go calls them.
#
# Only libheif's libde265 decoder plugin is built: no encoders, no AV1, no plugin loading. The
# module imports nothing but wasi_snapshot_preview1 functions that wazero provides, and has no
# start function: the glue runs the C++ constructors on the first decode.
#
# Run it as root on Debian bookworm with a deb-src line for bookworm (it installs packages). The
# versions are pinned below and checked: the same versions give the same bytes (no debug
# information, source paths mapped away, sorted inputs, gzip -n); it prints the sha256 of the
# module. CI does not run it: its output is committed.
set -euo pipefail
export LC_ALL=C TZ=UTC
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$repo/shrink/internal/heif/heif.wasm.gz
keep=
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$(realpath -m "$2"); shift 2 ;;
	-k) keep=$(realpath -m "$2"); shift 2 ;;
	*) echo "usage: scripts/wasm/heif.sh [-o OUT.wasm.gz] [-k WORKDIR]" >&2; exit 2 ;;
	esac
done

# Pinned Debian versions. LLVM 22 is bookworm-security's (the newest clang there with libc++ for
# wasm32); the sources are bookworm's deb-src.
llvm=22
llvm_version=1:22.1.8-1~deb12u1
wasi_libc_version=0.0~git20220510.9886d3d-2
wabt_version=1.0.32-1
de265_version=1.0.11-1+deb12u2
heif_version=1.15.1-1+deb12u1

# Compiler flags, chosen by measurement (the commit that adopted them gives the figures): -O3,
# SIMD (wazero runs the SIMD proposal; the patched inverse transform is written for it) and
# link-time optimisation across libde265, libheif and the glue; no exceptions (wazero has no
# exception handling: an allocation that fails traps, which the Go side reports by the memory
# limit that caused it); NDEBUG as Debian's and upstream's release builds. HEIF_WASM_OPT and
# HEIF_WASM_DEFS replace them for experiments: HEIF_WASM_DEFS=-DHEIF_WASI_NO_LOOP_FILTERS turns
# off libde265's deblocking and SAO (libheif's patch), which was measured and left out: it saves
# too little of the decode to be worth a decode that is not the standard's.
opt=${HEIF_WASM_OPT:--O3 -msimd128 -flto}
defs=${HEIF_WASM_DEFS:-}

pkgs=(
	"clang-$llvm=$llvm_version" "lld-$llvm=$llvm_version"
	"libc++-$llvm-dev-wasm32=$llvm_version" "libc++abi-$llvm-dev-wasm32=$llvm_version"
	"libclang-rt-$llvm-dev-wasm32=$llvm_version"
	"wasi-libc=$wasi_libc_version" "wabt=$wabt_version" dpkg-dev
)
missing=0
for p in "${pkgs[@]}"; do
	name=${p%%=*}
	want=${p#*=}
	have=$(dpkg-query -W -f '${Version}' "$name" 2>/dev/null || true)
	if [ "$name" != dpkg-dev ] && [ "$have" != "$want" ]; then missing=1; fi
	if [ "$name" = dpkg-dev ] && [ -z "$have" ]; then missing=1; fi
done
if [ "$missing" = 1 ]; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}"
fi
for p in "${pkgs[@]}"; do
	name=${p%%=*}
	[ "$name" != dpkg-dev ] || continue
	have=$(dpkg-query -W -f '${Version}' "$name")
	[ "$have" = "${p#*=}" ] || { echo "heif.sh: $name is $have, not ${p#*=}" >&2; exit 1; }
	echo "tool   $name $have"
done

if [ -n "$keep" ]; then
	work=$keep
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
cd "$work"
if [ ! -d src ]; then
	mkdir -p dl
	# apt checks the files against the signed Sources index.
	(cd dl && apt-get source --download-only "libde265=$de265_version" "libheif=$heif_version")
	mkdir src
	dpkg-source -x "dl/libde265_${de265_version#*:}.dsc" src/libde265 >/dev/null
	dpkg-source -x "dl/libheif_${heif_version#*:}.dsc" src/libheif >/dev/null
	patch -d src/libde265 -p1 --no-backup-if-mismatch <"$here/patches/libde265-1.0.11-wasi.patch"
	patch -d src/libheif -p1 --no-backup-if-mismatch <"$here/patches/libheif-1.15.1-wasi.patch"
fi
echo "source libde265 $de265_version, libheif $heif_version"

# A sysroot of wasi-libc and libc++ alone: the default one, /usr, would let the host's headers
# in (/usr/include) where wasi-libc has none.
rm -rf sysroot && mkdir -p sysroot/include sysroot/lib
ln -s /usr/include/wasm32-wasi sysroot/include/wasm32-wasi
ln -s /usr/lib/wasm32-wasi sysroot/lib/wasm32-wasi

cc=(clang-$llvm --target=wasm32-wasi "--sysroot=$work/sysroot")
cxx=(clang++-$llvm --target=wasm32-wasi "--sysroot=$work/sysroot")
common=($opt -fno-exceptions -DNDEBUG $defs -g0 -fvisibility=hidden
	"-ffile-prefix-map=$work/src/=" "-ffile-prefix-map=$repo/=" "-ffile-prefix-map=$here/="
	-Wno-everything)
# HAVE_POSIX_MEMALIGN and HAVE_ALLOCA_H are what libde265's configure finds in wasi-libc.
de265_flags=(-std=c++11 -I "$here/include" -I src/libde265 -DHAVE_POSIX_MEMALIGN=1 -DHAVE_ALLOCA_H=1)
heif_flags=(-std=c++11 -I src/libheif -I src/libheif/libheif -I src/libde265
	-DHAVE_LIBDE265=1 -DLIBHEIF_EXPORTS -DHAVE_VISIBILITY)

rm -rf obj && mkdir -p obj/de265 obj/heif
objs=()
# compile runs one compiler in the background, at most as many at once as there are cores; a
# compiler that fails leaves no object, which the link's check below reports.
compile() {
	while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
	"$@" &
}
# libde265's decoder: every file of libde265/ but the encoder's and the x86/ARM assembly.
for f in $(cd src/libde265/libde265 && ls -1 *.cc | sort); do
	case $f in en265.cc) continue ;; esac
	compile "${cxx[@]}" "${common[@]}" "${de265_flags[@]}" -c "src/libde265/libde265/$f" -o "obj/de265/${f%.cc}.o"
	objs+=("obj/de265/${f%.cc}.o")
done
# libheif as its CMakeLists builds it with only the libde265 plugin, built in.
for f in bitstream box error heif heif_context heif_file heif_image heif_hevc heif_avif \
	heif_colorconversion heif_plugin_registry heif_plugin nclx heif_init metadata_compression \
	common_utils plugins/heif_decoder_libde265; do
	o=obj/heif/$(basename "$f").o
	compile "${cxx[@]}" "${common[@]}" "${heif_flags[@]}" -c "src/libheif/libheif/$f.cc" -o "$o"
	objs+=("$o")
done
wait
"${cc[@]}" "${common[@]}" -std=c11 -I src/libheif -x c -c "$repo/shrink/internal/heif/heif.c.txt" -o obj/glue.o
objs+=(obj/glue.o)
"${cc[@]}" "${common[@]}" -std=c11 -mbulk-memory -fno-builtin -c "$here/bulkmem.c" -o obj/bulkmem.o
objs+=(obj/bulkmem.o)
for o in "${objs[@]}"; do
	[ -s "$o" ] || { echo "heif.sh: $o was not built" >&2; exit 1; }
done

# No crt start file and no entry: the glue runs the constructors. The stack is wazero's to keep
# within the memory limit like the heap, so it is the linker's default.
"${cxx[@]}" "${common[@]}" -nostartfiles -Wl,--no-entry \
	-Wl,--export=decode -Wl,--export=malloc -Wl,--export=free \
	-Wl,--strip-all -Wl,--gc-sections \
	"${objs[@]}" -o heif.wasm

# Every import must be one of wasi_snapshot_preview1's, which the Go side instantiates.
bad=$(wasm-objdump -x -j Import heif.wasm | grep -- '<-' | grep -v '<- wasi_snapshot_preview1\.' || true)
[ -z "$bad" ] || { echo "heif.sh: imports outside WASI:" >&2; echo "$bad" >&2; exit 1; }
for e in decode malloc free memory; do
	wasm-objdump -x -j Export heif.wasm | grep -qF -- "-> \"$e\"" || { echo "heif.sh: no export $e" >&2; exit 1; }
done

gzip -9 -n <heif.wasm >"$out"
echo "module $(sha256sum <heif.wasm | cut -d' ' -f1)  $(stat -c %s heif.wasm) bytes"
echo "wrote  $out ($(stat -c %s "$out") bytes)"
