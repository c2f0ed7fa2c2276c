// Package sniff tells what a file is from its bytes: media type, kind, size, BLAKE3, and for raster
// images their dimensions and EXIF orientation, all in one read pass per file. It also walks
// folders the way `attachctl sniff` takes its arguments. It never prints or exits; its errors are
// *fault.Error values carrying the file.* codes of docs/errors.md.
package sniff

import (
	"context"
	"encoding/hex"
	"io"
	"path/filepath"
	"sync"

	"github.com/attachctl/attachctl/manifest/fault"
	unix "github.com/attachctl/attachctl/sniff/internal/fsys"
	"github.com/gabriel-vasile/mimetype"
	"github.com/zeebo/blake3"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/shrink/doc"
)

// Options tune Fill.
type Options struct {
	// NoHash reads only the head of the file (what type detection and the image header need: the
	// first 16 KiB, plus bounded reads of an image header that lies further in) and leaves Blake3
	// empty. The text check is then judged on that head only: a file whose first 16 KiB are text
	// but whose tail is not is reported as text.
	NoHash bool
	// Folder is how a folder's walk goes when rec.Path is a folder (FillFolder); without
	// Folders, a folder is file.unreadable ("is a directory").
	Folder  WalkOptions
	Folders bool
	// Keep, with NoHash: a file read whole (at most 16 KiB, the head) keeps its bytes in
	// rec.Sniffed (a Held), checked unchanged after the read, so that a stage that uploads it in
	// the same process reads it once.
	Keep bool
	// Pages, with the hash: a document (PDF, .docx, .xlsx, .pptx, .odt) also gets its page count
	// and text-layer fact, or the reason it cannot be read (docNote). Off by default: pdfium takes
	// about 5 ms a PDF and a third of a second to start in a process, where sniffing a small file
	// takes a few microseconds; resolve reads the documents it delivers itself.
	Pages bool
}

// Listed, in rec.Sniffed, is a folder walk's word that rec.Path was a regular file when the walk
// listed it (Entry.Regular): Fill then opens it without a stat first. Stat, open and fstat of every
// file in a folder is one system call more per file than open and fstat, and the fstat after the
// open catches a file replaced since the listing as the stat would have. Fill clears it.
type Listed struct{}

// Held is a small file's bytes as Fill read them whole (Options.Keep), and the path it read.
// Bytes is a buffer of Fill's that Release gives back.
type Held struct {
	Path  string
	Bytes []byte
}

// heldPool holds the buffers of Held, each of noHashHead bytes (what Keep holds at most): an
// upload of many small files otherwise allocates every file's bytes anew, and the first touch of
// that memory and the collector's work for it cost more than the copy into it.
var heldPool = sync.Pool{New: func() any { b := make([]byte, noHashHead); return &b }}

// Release gives h's buffer back for a later Fill; nothing may use h.Bytes after. Not calling it
// is safe: the buffer is then collected.
func (h Held) Release() {
	if cap(h.Bytes) == noHashHead {
		b := h.Bytes[:noHashHead]
		heldPool.Put(&b)
	}
}

const (
	bufSize  = 256 << 10 // one read of the pass
	headSize = 64 << 10  // kept for type detection, image headers and EXIF
	// noHashHead is what NoHash reads: the type and the text check are judged on it.
	noHashHead = 16 << 10
	// mimeLimit is how much of the head mimetype looks at: its own default, which its detectors
	// (office formats inside zip, JSON and CSV judged on a truncated document) are tuned for. More
	// only costs: mimetype parses JSON and CSV up to the limit.
	mimeLimit = 3072
)

func init() { mimetype.SetLimit(mimeLimit) }

// inspect gives a document that package doc reads its page count and text-layer fact, or the
// reason it cannot be read (docNote): still a document, never an error that stops the pipeline.
// Other files, and documents of other formats, cost nothing more.
func inspect(rec *manifest.Record, r io.ReaderAt, size int64) {
	format := doc.FormatOf(rec.Mime)
	if format == "" {
		return
	}
	info := doc.Inspect(context.Background(), r, size, format, doc.Limits{})
	if info.Reason != "" {
		rec.DocNote = info.Reason
		return
	}
	rec.Pages, rec.TextLayer = info.Pages, &info.TextLayer
}

var (
	bufPool  = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}
	hashPool = sync.Pool{New: func() any { return blake3.New() }}
)

// Fill sniffs the file at rec.Path and sets rec's Name, Size, Mime, Kind, Blake3 (unless
// opts.NoHash), and for raster images Width, Height and Orientation. A symlink given as the path
// is followed. The bytes are read once: the same pass hashes, checks text-ness incrementally and
// keeps the head for mimetype and the image header.
//
// Errors carry codes: file.missing (no such file), file.unreadable (permission, symlink loop, a
// folder, an I/O error), file.notRegular (FIFO, socket, device: never read, and a FIFO never
// blocks: the file is opened with O_NONBLOCK and checked with fstat before any read), file.changed
// (size or modification time moved during the read, or fewer or more bytes than the size).
func Fill(rec *manifest.Record, opts Options) error {
	path := rec.Path
	rec.Name = filepath.Base(path)

	var st unix.Stat_t
	if _, listed := rec.Sniffed.(Listed); listed {
		// The walk saw a regular file: no stat before the open, the fstat after it checks again.
		rec.Sniffed = nil
	} else {
		if err := retry(func() error { return unix.Stat(path, &st) }); err != nil {
			return pathError(path, err)
		}
		if opts.Folders && uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR {
			return FillFolder(rec, opts, opts.Folder)
		}
		if err := checkRegular(path, uint32(st.Mode)); err != nil {
			return err
		}
	}
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		return err
	})
	if err != nil {
		return pathError(path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return pathError(path, err)
	}
	if err := checkRegular(path, uint32(st.Mode)); err != nil { // replaced between stat and open
		return err
	}
	size, mtime := st.Size, st.Mtim

	// want is what the pass reads: the whole file, or only its head with NoHash. When it is the
	// whole file, each read asks for one byte more than the size says is left, so that a file that
	// grew (or one, like those in /proc, whose stat size is not its length) is caught.
	want, probe := size, int64(1)
	if opts.NoHash && want > noHashHead {
		want, probe = noHashHead, 0
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var h *blake3.Hasher
	if !opts.NoHash {
		h = hashPool.Get().(*blake3.Hasher)
		h.Reset()
		defer hashPool.Put(h)
	}
	var tc textCheck
	var total int64
	var m *mimetype.MIME
	var img imageInfo
	var headMime, headKind string // refine's answer from the head, "" when it has none
	needText := true              // false once the format alone decides the kind (classify's first rule)
	for first, eof := true, false; !eof && total < want+probe; first = false {
		ask := min(int64(len(buf)), want+probe-total)
		n, err := readFull(fd, buf[:ask], int(ask-probe))
		eof = int64(n) < ask // readFull stops short only at the end of the file
		if err != nil {
			return pathError(path, err)
		}
		if first && n > 0 {
			// The first fill of the buffer holds the head: detect the type and parse the image
			// header now, before later reads overwrite it.
			head := buf[:min(n, headSize)]
			m = mimetype.Detect(head)
			k := kindOf(baseMime(m.String()))
			if k == manifest.KindImage {
				img = parseImage(&header{head: head, size: size, ra: fdReaderAt(fd)})
			}
			needText = k == "" || isTextual(m)
			if mt := baseMime(m.String()); k != "" {
				if rm, rk := refine(mt, k, head); rm != mt {
					headMime, headKind = rm, rk
				}
			}
		}
		if n == 0 {
			break
		}
		total += int64(n)
		if needText {
			tc.write(buf[:n])
		}
		if h != nil {
			h.Write(buf[:n])
		}
	}

	// With NoHash only the head was read, so only a file that shrank under us is caught (total
	// short of want); the second fstat, which would cost a sixth of the small-file time, is skipped,
	// unless the bytes read are kept for an upload (the check its own read would make).
	keep := opts.Keep && opts.NoHash && want == size
	if !opts.NoHash || keep {
		if err := unix.Fstat(fd, &st); err != nil {
			return pathError(path, err)
		}
	}
	if total != want || st.Size != size || st.Mtim != mtime {
		if total > want {
			return fault.Errorf(fault.FileChanged, "%s: changed while being read (its size said %d bytes, more were read)", manifest.Quote(path), size)
		}
		return fault.Errorf(fault.FileChanged, "%s: changed while being read (size %d, then %d, %d bytes read)",
			manifest.Quote(path), size, st.Size, total)
	}

	rec.SetSize(size)
	rec.Width, rec.Height, rec.Orientation = img.Width, img.Height, img.Orientation
	if m == nil { // an empty file
		rec.Mime, rec.Kind = mimeText, manifest.KindText
	} else {
		rec.Mime, rec.Kind = classify(m, tc.text(total == size))
		if headMime != "" && rec.Mime == baseMime(m.String()) {
			rec.Mime, rec.Kind = headMime, headKind
		}
		rec.Mime = withCharset(rec.Mime, rec.Kind, &tc)
		if rec.Kind != manifest.KindImage {
			rec.Width, rec.Height, rec.Orientation = 0, 0, 0
		}
	}
	if h != nil {
		var sum [32]byte
		rec.Blake3 = hex.EncodeToString(h.Sum(sum[:0]))
	} else {
		rec.Blake3 = ""
	}
	rec.Pages, rec.TextLayer, rec.DocNote = 0, nil, ""
	if rec.Kind == manifest.KindDocument && opts.Pages && !opts.NoHash {
		inspect(rec, fdReaderAt(fd), size)
	}
	if keep { // one read of the buffer holds the whole file: want+probe fits in it
		hp := heldPool.Get().(*[]byte)
		rec.Sniffed = Held{Path: path, Bytes: (*hp)[:copy(*hp, buf[:size])]}
	}
	return nil
}

// readFull reads into b until it is full or the file ends, retrying EINTR. A short read once at
// least enough bytes are in is taken as the end too: it saves the read that would return 0 for
// every small file (the caller asks one byte past the size; a file that grows anyway is caught by
// its size in the fstat after the pass).
func readFull(fd int, b []byte, enough int) (int, error) {
	got := 0
	for got < len(b) {
		n, err := unix.Read(fd, b[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
		got += n
		if got >= enough && got < len(b) {
			break
		}
	}
	return got, nil
}

// fdReaderAt is pread on a file descriptor, for the bounded header reads past the head.
type fdReaderAt int

func (fd fdReaderAt) ReadAt(b []byte, off int64) (int, error) {
	got := 0
	for got < len(b) {
		n, err := unix.Pread(int(fd), b[got:], off+int64(got))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, err
		}
		if n == 0 {
			return got, errShort
		}
		got += n
	}
	return got, nil
}

func retry(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
