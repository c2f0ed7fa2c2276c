// Package heif decodes HEIC/HEIF (libheif with libde265) and AVIF (libavif with aom) with the
// two libraries compiled to WebAssembly and run by wazero: pure Go, no cgo, and the same result
// on every machine whether or not a system libheif or libavif is installed.
//
// heif.wasm.gz is built by scripts/wasm/heif.sh from Debian bookworm's packages alone: the
// sources of libde265 1.0.11 and libheif 1.15.1 (LGPL-3.0, LICENSE.libde265 and LICENSE.libheif)
// as `apt-get source` gives them, with Debian's patches, compiled by Debian's clang for wasm32-wasi
// against Debian's wasi-libc and libc++, with libheif's libde265 decoder alone, the patches in
// scripts/wasm/patches (no threads, no exceptions, YCbCr kept as decoded, a faster inverse
// transform with the same output), and our C glue heif.c.txt, which began as that of
// github.com/gen2brain/heic v0.4.5 (MIT, LICENSE.gen2brain-heic). The module is not built in CI:
// the script prints the versions it pins and the module's sha256.
//
// avif.wasm.gz and its glue avif.c.txt are those of github.com/gen2brain/avif v0.4.4, copied
// unchanged (their LICENSE files are beside them). Those packages are not imported: they load a
// system library first when one is there (a different decoder, and on some versions one that
// fails), and they compile the module afresh in every process, with no way to give wazero a
// compilation cache. Here a module is compiled only when the first image of its kind is met, and
// its machine code is kept in the cache folder of package wasmcache (keyed by the module's hash,
// so a changed module is compiled again) so that later processes load it instead of compiling.
package heif

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"image"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/attachctl/attachctl/shrink/internal/wasmcache"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

//go:embed heif.wasm.gz
var heifWasm []byte

//go:embed avif.wasm.gz
var avifWasm []byte

// ErrDecode is a file the library refused.
var ErrDecode = errors.New("the decoder refused the file")

// Limit bounds one decode's linear memory. It never grows past Max: a decode that would need
// more stops with a *MemoryError (the image is larger than its header says). Reserved is what the
// caller has set aside for it; each growth past that asks Grow for the bytes more, as it happens,
// and a refusal (nil Grow refuses) stops the decode with ErrBudget. A zero Reserved with no Grow
// gives the decode all of Max.
type Limit struct {
	Max, Reserved int64
	Grow          func(n int64) bool
}

// ErrBudget is a decode stopped because its memory grew past what was reserved for it and Grow
// could not give more: the caller may decode again with more reserved.
var ErrBudget = errors.New("the decoder needed more memory than was reserved for it")

// MemoryError is a decode stopped because the decoder's memory would have grown past its limit:
// the image is larger than its header says, or needs more than the header lets one expect.
type MemoryError struct{ Limit int64 }

func (e *MemoryError) Error() string {
	return fmt.Sprintf("the decoder needed more than the %d MiB its header allows for", e.Limit>>20)
}

// module is one library: compiled once per process, instantiated once per decode (an instance
// is single-threaded, and a fresh one gives its memory back when closed).
type module struct {
	wasm []byte
	once sync.Once
	rt   wazero.Runtime
	cm   wazero.CompiledModule
	err  error
}

var heifMod, avifMod = &module{wasm: heifWasm}, &module{wasm: avifWasm}

func (m *module) compile() error {
	m.once.Do(func() {
		ctx := context.Background()
		m.rt = wazero.NewRuntimeWithConfig(ctx, wasmcache.RuntimeConfig())
		if _, m.err = wasi_snapshot_preview1.Instantiate(ctx, m.rt); m.err != nil {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(m.wasm))
		if err != nil {
			m.err = err
			return
		}
		code, err := io.ReadAll(zr)
		if err != nil {
			m.err = err
			return
		}
		// The compile is on the first decode's path, and in a cold run every worker waits for
		// it: it takes all the cores there are, as the decodes would.
		m.cm, m.err = m.rt.CompileModule(experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0)), code)
	})
	return m.err
}

// Warm compiles (or loads from the cache) both modules now, for benchmarks and tests that
// measure decoding apart from the compile.
func Warm() error {
	if err := heifMod.compile(); err != nil {
		return err
	}
	return avifMod.compile()
}

// instance is a running module with helpers over its exports and memory.
type instance struct {
	ctx context.Context
	mod interface {
		Close(context.Context) error
	}
	call  func(name string, args ...uint64) (uint64, error)
	read  func(off, n uint32) ([]byte, bool)
	write func(off uint32, b []byte) bool
	u32   func(off uint32) (uint32, bool)
	mem   *limited
}

// instantiate starts an instance of m whose linear memory stays within lim.
func (m *module) instantiate(lim Limit) (*instance, error) {
	if err := m.compile(); err != nil {
		return nil, fmt.Errorf("compiling the decoder: %w", err)
	}
	in := &instance{}
	limit := lim.Max
	ctx := experimental.WithMemoryAllocator(context.Background(), limitedAllocator(lim, &in.mem))
	// An anonymous instance, so that several decodes can run at once; no stdout or stderr.
	mod, err := m.rt.InstantiateModule(ctx, m.cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		short := in.mem != nil && in.mem.short
		if in.mem != nil {
			in.mem.Free()
		}
		if short {
			return nil, ErrBudget
		}
		return nil, oneLine(err)
	}
	in.ctx, in.mod = ctx, mod
	in.call = func(name string, args ...uint64) (uint64, error) {
		f := mod.ExportedFunction(name)
		if f == nil {
			return 0, fmt.Errorf("the module has no %s", name)
		}
		r, err := f.Call(ctx, args...)
		if in.mem != nil && in.mem.over {
			// Whatever the library made of the NULL (an error, a trap, an abort), the cause
			// is the limit.
			return 0, &MemoryError{Limit: limit}
		}
		if in.mem != nil && in.mem.short {
			return 0, ErrBudget
		}
		if err != nil {
			return 0, oneLine(err)
		}
		if len(r) == 0 {
			return 0, nil
		}
		return r[0], nil
	}
	mem := mod.Memory()
	in.read = mem.Read
	in.write = mem.Write
	in.u32 = mem.ReadUint32Le
	return in, nil
}

func (in *instance) close() { in.mod.Close(in.ctx) }

// begin instantiates m, copies data in, and makes room for n 32-bit values the module's decode
// writes back; it returns the instance and the addresses of data and of the values.
func (m *module) begin(data []byte, n int, lim Limit) (in *instance, src, vars uint32, err error) {
	if in, err = m.instantiate(lim); err != nil {
		return nil, 0, 0, err
	}
	if src, err = in.put(data); err == nil {
		vars, err = in.alloc(4 * n)
	}
	if err != nil {
		in.close()
		return nil, 0, 0, err
	}
	return in, src, vars, nil
}

// config calls decode with args (config only) and reads the first n values it wrote at vars.
func (in *instance) config(args []uint64, vars uint32, n int) ([]uint32, error) {
	if ok, err := in.call("decode", args...); err != nil || ok == 0 {
		return nil, errOr(err)
	}
	v := make([]uint32, n)
	for i := range v {
		x, ok := in.u32(vars + uint32(4*i))
		if !ok {
			return nil, errors.New("reading the decoder's memory")
		}
		v[i] = x
	}
	return v, nil
}

// put copies data into the instance's memory and returns its address.
func (in *instance) put(data []byte) (uint32, error) {
	p, err := in.call("malloc", uint64(len(data)))
	if err != nil || p == 0 {
		return 0, noRoom(err, len(data))
	}
	if !in.write(uint32(p), data) {
		return 0, errors.New("writing the decoder's memory")
	}
	return uint32(p), nil
}

func (in *instance) alloc(n int) (uint32, error) {
	p, err := in.call("malloc", uint64(n))
	if err != nil || p == 0 {
		return 0, noRoom(err, n)
	}
	return uint32(p), nil
}

// noRoom is why a malloc of n bytes failed.
func noRoom(err error, n int) error {
	var me *MemoryError
	if errors.As(err, &me) || errors.Is(err, ErrBudget) {
		return err
	}
	return fmt.Errorf("out of decoder memory for %d bytes", n)
}

// oneLine is a runtime error without the WebAssembly stack trace wazero appends to a trap:
// its first line ("wasm error: unreachable", "wasm error: out of bounds memory access").
func oneLine(err error) error {
	msg, _, cut := strings.Cut(err.Error(), "\n")
	if !cut {
		return err
	}
	return fmt.Errorf("the decoder stopped: %s", strings.TrimSpace(msg))
}

// pixels makes room for size bytes of output, calls decode with args(that address), and copies
// the output out of the instance's memory, which is dropped when the instance closes.
func (in *instance) pixels(size int, args func(out uint32) []uint64) ([]byte, error) {
	out, err := in.alloc(size)
	if err != nil {
		return nil, err
	}
	if ok, err := in.call("decode", args(out)...); err != nil || ok == 0 {
		return nil, errOr(err)
	}
	b, ok := in.read(out, uint32(size))
	if !ok {
		return nil, errors.New("reading the decoder's memory")
	}
	return bytes.Clone(b), nil
}

// libheif's colour spaces and chroma formats, as heif.c reports them.
const (
	heifYCbCr      = 0
	heifRGB        = 1
	heifMonochrome = 2
	heifChroma420  = 1
	heifChroma422  = 2
	heifChroma444  = 3
)

// align16 is libheif's row alignment in heif.c's output.
func align16(n int) int { return (n + 15) &^ 15 }

// DecodeHEIC decodes the primary image of a HEIC/HEIF file. libheif applies the container's
// rotation and mirroring (irot, imir) and its crop (clap), so the image is as displayed. Its
// YCbCr planes are returned as libheif decoded them: the matrix the caller assumes is JPEG's.
//
// The decoder's memory stays within lim (a *MemoryError past lim.Max, ErrBudget when a growth
// past lim.Reserved is refused).
func DecodeHEIC(data []byte, lim Limit) (image.Image, error) {
	in, src, vars, err := heifMod.begin(data, 5, lim)
	if err != nil {
		return nil, err
	}
	defer in.close()
	args := func(configOnly, out uint64) []uint64 {
		return []uint64{uint64(src), uint64(len(data)), configOnly,
			uint64(vars), uint64(vars + 4), uint64(vars + 8), uint64(vars + 12), uint64(vars + 16), out}
	}
	v, err := in.config(args(1, 0), vars, 5)
	if err != nil {
		return nil, err
	}
	w, h, space, chroma, premul := int(v[0]), int(v[1]), v[2], v[3], v[4]
	if w <= 0 || h <= 0 || w > 1<<16 || h > 1<<16 {
		return nil, fmt.Errorf("%dx%d pixels", w, h)
	}
	rect := image.Rect(0, 0, w, h)
	var size, yStride, cStride, ch int
	var ratio image.YCbCrSubsampleRatio
	switch space {
	case heifYCbCr:
		cw := w
		ch = h
		switch chroma {
		case heifChroma420:
			ratio, cw, ch = image.YCbCrSubsampleRatio420, (w+1)/2, (h+1)/2
		case heifChroma422:
			ratio, cw = image.YCbCrSubsampleRatio422, (w+1)/2
		case heifChroma444:
			ratio = image.YCbCrSubsampleRatio444
		default:
			return nil, fmt.Errorf("chroma format %d", chroma)
		}
		yStride, cStride = align16(w), align16(cw)
		size = yStride*h + 2*cStride*ch
	case heifMonochrome:
		yStride = align16(w)
		size = yStride * h
	case heifRGB:
		yStride = align16(4 * w)
		size = yStride * h
	default:
		return nil, fmt.Errorf("colour space %d", space)
	}
	pix, err := in.pixels(size, func(out uint32) []uint64 { return args(0, uint64(out)) })
	if err != nil {
		return nil, err
	}
	switch space {
	case heifYCbCr:
		i0, i1 := yStride*h, yStride*h+cStride*ch
		return &image.YCbCr{Y: pix[:i0:i0], Cb: pix[i0:i1:i1], Cr: pix[i1:size:size],
			YStride: yStride, CStride: cStride, SubsampleRatio: ratio, Rect: rect}, nil
	case heifMonochrome:
		return &image.Gray{Pix: pix, Stride: yStride, Rect: rect}, nil
	}
	if premul == 1 {
		return &image.RGBA{Pix: pix, Stride: yStride, Rect: rect}, nil
	}
	return &image.NRGBA{Pix: pix, Stride: yStride, Rect: rect}, nil
}

// DecodeAVIF decodes the first image of an AVIF file to RGBA (alpha premultiplied), 8 bits a
// sample, or 16 for a deeper file. libavif converts YUV with the file's own matrix and range,
// and does not apply the container's rotation or mirroring: the image is as stored.
//
// The decoder's memory stays within lim (a *MemoryError past lim.Max, ErrBudget when a growth
// past lim.Reserved is refused).
func DecodeAVIF(data []byte, lim Limit) (image.Image, error) {
	in, src, vars, err := avifMod.begin(data, 4, lim)
	if err != nil {
		return nil, err
	}
	defer in.close()
	delay, err := in.alloc(8)
	if err != nil {
		return nil, err
	}
	args := func(configOnly, out uint64) []uint64 {
		return []uint64{uint64(src), uint64(len(data)), configOnly, 0,
			uint64(vars), uint64(vars + 4), uint64(vars + 8), uint64(vars + 12), uint64(delay), out}
	}
	v, err := in.config(args(1, 0), vars, 3)
	if err != nil {
		return nil, err
	}
	w, h, depth := int(v[0]), int(v[1]), v[2]
	if w <= 0 || h <= 0 || w > 1<<16 || h > 1<<16 {
		return nil, fmt.Errorf("%dx%d pixels", w, h)
	}
	bpp := 4
	if depth > 8 {
		bpp = 8
	}
	size := w * h * bpp
	pix, err := in.pixels(size, func(out uint32) []uint64 { return args(0, uint64(out)) })
	if err != nil {
		return nil, err
	}
	rect := image.Rect(0, 0, w, h)
	if bpp == 4 {
		return &image.RGBA{Pix: pix, Stride: 4 * w, Rect: rect}, nil
	}
	// 16-bit samples come in the machine's order (little-endian WebAssembly); image.RGBA64
	// wants them big-endian.
	for i := 0; i+1 < len(pix); i += 2 {
		pix[i], pix[i+1] = pix[i+1], pix[i]
	}
	return &image.RGBA64{Pix: pix, Stride: 8 * w, Rect: rect}, nil
}

func errOr(err error) error {
	if err != nil {
		return err
	}
	return ErrDecode
}
