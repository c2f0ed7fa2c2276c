// Package stage holds the stages over a store, once for every backend: upload (with resume),
// verify and touch. A stage turns manifest records into the store seam's types (ops/store) and
// back; the backends behind the seam know no record. What a backend does better than the seam's
// plain calls (the local store's group commit, S3's parallel parts) it declares in its Features
// (store.Streamer, store.Batcher, store.Checker), which a stage uses when declared.
//
// It also holds the one record loop every command runs (Loop: sniff, work with --jobs workers,
// records handed on in input order) and its inputs (PathRecords, ManifestRecords, Interruptible),
// so that an embedder runs a stage as the command does, and the command layer keeps only its
// flags, what it prints and its exit codes.
package stage

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
)

// Source is what the upload stage starts from: the file rec names, as an absolute path, the
// plain name it is uploaded under (rec.Name, else the file's own name), and the BLAKE3 the record
// carries ("" when none), each checked as docs/store.md ("Ids and names") says.
func Source(rec *manifest.Record) (abs, name, blake3 string, err error) {
	if abs, err = absPath(rec.Path); err != nil {
		return "", "", "", fault.Errorf(fault.FileUnreadable, "%s: %v", rec.Path, err)
	}
	name = rec.Name
	if name == "" {
		name = filepath.Base(abs)
	}
	if err = store.ValidName(name); err != nil {
		return "", "", "", err
	}
	if blake3, err = store.CheckHex(rec.Blake3); err != nil {
		return "", "", "", err
	}
	return abs, name, blake3, nil
}

// workDir is the process's working folder, read once: filepath.Abs reads it again (two stats)
// for each relative path, a tenth of the system calls of uploading a small file. attachctl
// never changes its working folder.
var workDir = sync.OnceValues(os.Getwd)

// absPath is filepath.Abs(p) with the working folder read once.
func absPath(p string) (string, error) {
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	wd, err := workDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, p), nil
}

// sourceFile is an open source file and what it was at open (store.SourceFile).
type sourceFile struct {
	*os.File
	at os.FileInfo
}

// openSource opens the file a record names (following a symlink, as sniff does for a named
// path) without blocking on a FIFO, and checks that it is a regular file.
func openSource(path string) (*sourceFile, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		code := fault.FileUnreadable
		if errors.Is(err, os.ErrNotExist) {
			code = fault.FileMissing
		}
		return nil, fault.Errorf(code, "%s: %w", path, unwrapPath(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fault.Errorf(fault.FileUnreadable, "%s: %w", path, unwrapPath(err))
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, fault.Errorf(fault.FileUnreadable, "%s: is a directory", path)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, fault.Errorf(fault.FileNotRegular, "%s: is not a regular file; not read", path)
	}
	return &sourceFile{File: f, at: fi}, nil
}

// source is a source file open for the upload.
type source interface {
	store.SourceFile
	io.Closer
}

// sourceOf opens the file rec names at abs, or takes the bytes the sniff of this run read whole
// (rec.Sniffed, checked unchanged after that read), so that a small file is read once; it
// returns the source and its size.
func sourceOf(rec *manifest.Record, abs string) (source, int64, error) {
	if h, ok := rec.Sniffed.(sniff.Held); ok && h.Path == rec.Path && rec.HasSize && int64(len(h.Bytes)) == rec.Size {
		rec.Sniffed = nil
		return &heldSource{Reader: bytes.NewReader(h.Bytes), name: abs, held: h}, rec.Size, nil
	}
	f, err := openSource(abs)
	if err != nil {
		return nil, 0, err
	}
	return f, f.at.Size(), nil
}

// heldSource is a small file's bytes as its sniff read them, whole. Its reads copy them out, so
// that the buffer goes back to the sniff at Close.
type heldSource struct {
	*bytes.Reader
	name string
	held sniff.Held
}

func (h *heldSource) Name() string { return h.name }
func (h *heldSource) Close() error {
	h.held.Release()
	h.held, h.Reader = sniff.Held{}, nil
	return nil
}
func (h *heldSource) Unchanged() error { return nil } // the sniff checked after its read

// unwrapPath drops the *PathError's own copy of the path: the message names it once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Unchanged checks that the source still has the size and modification time it had at open, and
// did not grow.
func (f *sourceFile) Unchanged() error {
	changed := fault.Errorf(fault.UploadSourceChange, "%s: changed while being uploaded", f.Name())
	var one [1]byte
	if k, _ := f.ReadAt(one[:], f.at.Size()); k > 0 {
		return changed // it grew
	}
	now, err := f.Stat()
	if err != nil {
		return fault.Errorf(fault.FileUnreadable, "%s: %v", f.Name(), unwrapPath(err))
	}
	if now.Size() != f.at.Size() || !now.ModTime().Equal(f.at.ModTime()) {
		return changed
	}
	return nil
}

var _ store.SourceFile = (*sourceFile)(nil)
var _ io.ReaderAt = (*sourceFile)(nil)
