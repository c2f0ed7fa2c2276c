package acp

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// Uploads is all resolve asks of a store. It makes no assumption about how the store keeps its
// bytes: an upload is a reader and a size, and a local path only when the store has one.
type Uploads interface {
	// Open opens the finished upload id, whose file is name, for reading, with every check the
	// store makes on a finished upload (the guarded open). Not there is upload.missing; there but
	// failing a check is upload.unreadable; an id or name that is not plain is upload.invalid.
	Open(id, name string) (*Upload, error)
	// MarkUsed marks the finished uploads ids used at at (their .used marker).
	MarkUsed(ids []string, at time.Time) error
}

// Upload is one finished upload, open for reading from its first byte.
type Upload struct {
	io.ReadCloser
	// Size is its length in bytes.
	Size int64
	// Blake3 is the hex BLAKE3 the store recorded when the upload was finished.
	Blake3 string
	// Path is the finished file on this machine, for a by-path link; "" when the store keeps no
	// local file (object storage), and then by-path files are copied into a work folder.
	Path string
}

// Backend is a store behind the backend seam (ops/store) as Uploads, its calls made under ctx:
// the local folder (local.Store.Backend) or object storage. The path of a by-path link is the
// backend's finished path when it has one (store.Pather); otherwise resolve needs a work folder.
func Backend(ctx context.Context, b store.Backend) Uploads { return backend{ctx, b} }

type backend struct {
	ctx context.Context
	b   store.Backend
}

func (b backend) Open(id, name string) (*Upload, error) {
	r, err := b.b.Open(b.ctx, id, name)
	if err != nil {
		return nil, err
	}
	info := r.Info()
	// A local file can say its length: one that is not what was recorded is not the upload.
	if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err != nil || fi.Size() != info.Size {
			r.Close()
			return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: %s: not the %d bytes its metadata records", id, name, info.Size)
		}
	}
	u := &Upload{ReadCloser: r, Size: info.Size, Blake3: info.Blake3}
	if p := b.b.Features().Pather; p != nil {
		u.Path = p.FinishedPath(id, name)
	}
	return u, nil
}

func (b backend) MarkUsed(ids []string, at time.Time) error { return b.b.MarkUsed(b.ctx, ids, at) }
