package s3

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

func (s *Store) missing(id string) error { return store.NotFinished(id, s.URI) }

// uploadErr is the error of a request about the finished upload id: upload.missing when its key
// is not there.
func (s *Store) uploadErr(id string, err error) error {
	if notFound(err) {
		return s.missing(id)
	}
	return s.wrap(fault.UploadUnreadable, "upload "+id, err)
}

// Info reads a finished upload's metadata (one listing and one HEAD).
func (s *Store) Info(ctx context.Context, id string) (*store.Info, error) {
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	return s.up.FinishedInfo(ctx, id)
}

// folders is the store's uploads as a store.FolderReader: a HEAD of an upload's object, and a
// folder upload's listing's and a GET of its metadata.
type folders struct{ objects }

func (f folders) HeadFile(ctx context.Context, id, name string) (*store.Info, error) {
	return f.s.head(ctx, id, name)
}

func (f folders) HeadTree(ctx context.Context, id string) (*store.ListingHead, error) {
	return f.s.headTree(ctx, id)
}

func (f folders) ReadTreeObject(ctx context.Context, id, name string) ([]byte, string, error) {
	return f.s.ReadTreeObject(ctx, id, name)
}

func (f folders) FinishedURI(id, name string) string { return f.s.FinishedURI(id, name) }

// headObj is the one HEAD of the object name of upload id, for a file upload's Info and a folder
// upload's listing: upload.missing when it is not there.
func (s *Store) headObj(ctx context.Context, id, name string) (*awss3.HeadObjectOutput, error) {
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, name))})
	return out, s.uploadErr(id, err)
}

func (s *Store) head(ctx context.Context, id, name string) (*store.Info, error) {
	out, err := s.headObj(ctx, id, name)
	if err != nil {
		return nil, err
	}
	return store.ObjectInfo(id, name, s.URI, s.FinishedURI(id, name), aws.ToInt64(out.ContentLength), out.Metadata, aws.ToTime(out.LastModified))
}

// headWindow is what Open asks for first: enough for a reader that looks at the head (resolve
// sniffs 8 KiB) to be answered by one request whose body is read to its end, so the connection
// is kept; a reader that goes on gets the rest in one more request.
const headWindow = 64 << 10

// Open opens a finished upload for reading: a ranged GET of its head (which brings its size and
// metadata), then, if read further, one GET of the rest (If-Match the same ETag).
func (s *Store) Open(ctx context.Context, id, name string) (store.Reader, error) {
	if err := cmp.Or(store.ValidID(id), store.ValidName(name)); err != nil {
		return nil, err
	}
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	r, err := s.openKey(ctx, id, name, s.FinishedKey(id, name))
	if fault.CodeOf(err) == fault.UploadMissing {
		if th, terr := s.headTree(ctx, id); terr == nil && th != nil && th.Name == name {
			return nil, store.FolderAsFile(id, name)
		}
	}
	return r, err
}

// openKey opens the object key of upload id (name: its name in the Info; "": a file of a folder
// upload, whose Info is its id and size, and whose BLAKE3 verify reads from the listing) for
// reading.
func (s *Store) openKey(ctx context.Context, id, name, key string) (store.Reader, error) {
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.Bucket, Key: &key,
		Range: aws.String(fmt.Sprintf("bytes=0-%d", headWindow-1))})
	if httpStatus(err) == 416 { // an empty object has no byte 0
		out, err = s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.Bucket, Key: &key})
	}
	if err != nil {
		return nil, s.uploadErr(id, err)
	}
	size := aws.ToInt64(out.ContentLength)
	if cr := aws.ToString(out.ContentRange); cr != "" { // "bytes 0-65535/819200"
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if total, perr := strconv.ParseInt(cr[i+1:], 10, 64); perr == nil {
				size = total
			}
		}
	}
	info, err := &store.Info{ID: id, Size: size}, error(nil)
	if name != "" {
		info, err = store.ObjectInfo(id, name, s.URI, s.FinishedURI(id, name), size, out.Metadata, aws.ToTime(out.LastModified))
	}
	if err != nil {
		out.Body.Close()
		return nil, err
	}
	return &reader{s: s, ctx: ctx, key: key, etag: aws.ToString(out.ETag), body: out.Body,
		left: aws.ToInt64(out.ContentLength), info: info}, nil
}

type reader struct {
	s    *Store
	ctx  context.Context
	key  string
	etag string
	body io.ReadCloser
	left int64 // bytes of body not read yet
	pos  int64 // bytes of the object read so far
	info *store.Info
}

func (r *reader) Info() *store.Info { return r.info }

// Close drains what is left of a head window, so that its connection is used again.
func (r *reader) Close() error {
	if r.body == nil {
		return nil
	}
	if r.left > 0 && r.left <= headWindow {
		io.Copy(io.Discard, r.body)
	}
	err := r.body.Close()
	r.body = nil
	return err
}

func (r *reader) Read(p []byte) (int, error) {
	if r.body == nil {
		return 0, io.ErrClosedPipe
	}
	if r.left == 0 {
		if r.pos >= r.info.Size {
			return 0, io.EOF
		}
		r.body.Close()
		out, err := r.s.client.GetObject(r.ctx, &awss3.GetObjectInput{Bucket: &r.s.Bucket, Key: &r.key,
			Range: aws.String(fmt.Sprintf("bytes=%d-", r.pos)), IfMatch: aws.String(r.etag)})
		if err != nil {
			r.body = io.NopCloser(strings.NewReader(""))
			return 0, r.s.wrap(fault.UploadUnreadable, "upload "+r.info.ID, err)
		}
		r.body, r.left = out.Body, aws.ToInt64(out.ContentLength)
	}
	n, err := r.body.Read(p)
	r.left -= int64(n)
	r.pos += int64(n)
	if err == io.EOF && r.pos < r.info.Size {
		if r.left != 0 {
			return n, fault.Errorf(fault.StoreUnreachable, "store %s: upload %s: reading %s: the server stopped sending at %d of %d bytes", r.s.URI, r.info.ID, r.key, r.pos, r.info.Size)
		}
		err = nil // the head window ended; the next Read fetches the rest
	}
	if err != nil && err != io.EOF {
		err = r.s.readErr(r.info.ID, r.key, r.pos, err)
	}
	return n, err
}

// readErr is a failure while an object's bytes come: the server stopped sending, or the
// connection broke (store.unreachable, in the words of what broke it).
func (s *Store) readErr(id, key string, at int64, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err == io.ErrUnexpectedEOF {
		err = errors.New("the connection ended before the object did")
	}
	return fault.Errorf(fault.StoreUnreachable, "store %s: upload %s: reading %s at byte %d: %v", s.URI, id, key, at, err)
}
