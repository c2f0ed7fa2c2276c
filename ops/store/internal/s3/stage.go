package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/zeebo/blake3"
)

// part is a part the server holds of a multipart upload (Number; its ETag the MD5 of its bytes).
type part struct {
	Number   int32
	Size     int64
	ETag     string
	Modified time.Time
}

// parts lists the parts the server holds for a multipart upload; upload.missing when the upload
// is not there any more.
func (s *Store) parts(ctx context.Context, id, name, uploadID string) ([]part, error) {
	var ps []part
	pages := awss3.NewListPartsPaginator(s.client, &awss3.ListPartsInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, name)), UploadId: &uploadID})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if notFound(err) {
			return nil, fault.Errorf(fault.UploadMissing, "upload %s: its multipart upload is gone from store %s", id, s.URI)
		} else if err != nil {
			return nil, s.wrap(fault.UploadUnreadable, "upload "+id, err)
		}
		for _, p := range out.Parts {
			ps = append(ps, part{Number: aws.ToInt32(p.PartNumber), Size: aws.ToInt64(p.Size), ETag: strings.Trim(aws.ToString(p.ETag), `"`), Modified: aws.ToTime(p.LastModified)})
		}
	}
	return ps, nil
}

// buffers is the pool of part buffers all the streams of this Store share (jobs of chunk bytes,
// made when first taken), so that the bound on memory holds for the whole command.
func (s *Store) buffers(jobs int, chunk int64) chan []byte {
	s.bufMu.Lock()
	defer s.bufMu.Unlock()
	if s.bufs == nil || s.bufChunk != chunk {
		s.bufs, s.bufChunk = make(chan []byte, jobs), chunk
		for i := 0; i < jobs; i++ {
			s.bufs <- nil
		}
	}
	return s.bufs
}

// Stream puts the source into the store as a multipart upload of its finished key, parts sent
// opts.Jobs at once (store.Streamer), by the rules of store.StreamUpload. The BLAKE3 goes into the
// object's metadata, so it must be known before the first byte is sent: a source without one costs
// one read of the file first. A killed run, run again with the same file, finds its multipart
// upload through the source note and sends only the parts the server does not hold with the same
// bytes (each held part's ETag is compared with the MD5 of the file's bytes). The completion is
// create-only (If-None-Match: *).
func (s *Store) Stream(ctx context.Context, src store.Source, f store.SourceFile, opts store.StreamOptions) (*store.Info, error) {
	opts = opts.WithDefaults(DefaultChunk)
	if opts.Chunk < MinChunk {
		return nil, fault.Errorf(fault.UploadInvalid, "--chunk %d: S3 takes parts of at least %d bytes", opts.Chunk, MinChunk)
	}
	return store.StreamUpload(ctx, s, src, f, opts)
}

// StreamHashFirst is always: the source note is keyed on the BLAKE3 (store.StreamBackend).
func (s *Store) StreamHashFirst(context.Context, store.Source) (bool, error) { return true, nil }

// StartStream looks the source's note up (store.Notes.StartStream): the finished upload it names,
// or the multipart upload to resume with the parts the server holds, or a new one
// (store.StreamBackend).
func (s *Store) StartStream(ctx context.Context, st store.StreamStart) (store.StreamFound, store.StreamWrite, error) {
	if _, err := s.checkStore(ctx, true); err != nil {
		return store.StreamFound{}, nil, err
	}
	src := st.Src
	return s.notes.StartStream(ctx, st, s.beginStage(ctx, src.Name, src.Size, src.Blake3), func(id string, pi *partialInfo, resumed bool) (store.NoteWrite, error) {
		w := &multipartWrite{s: s, id: id, pi: pi}
		var err error
		if resumed {
			w.held, err = s.partsHeld(ctx, id, pi)
		}
		return w, err
	})
}

// multipartWrite is the multipart upload of one source (store.NoteWrite).
type multipartWrite struct {
	s    *Store
	id   string
	pi   *partialInfo
	held map[int32]part
	// completed is the parts for the completion, once sent
	completed []types.CompletedPart
}

// Held is the bytes of the parts the server holds, each checked by its MD5 as the source is sent.
func (w *multipartWrite) Held() int64 {
	var kept int64
	for _, p := range w.held { // none for an empty source: its note is keyed on its size
		kept += p.Size
	}
	return kept
}

func (w *multipartWrite) Restart() { w.held = nil }

func (w *multipartWrite) Send(ctx context.Context, f store.SourceFile, _ int64, pass store.StreamPass) error {
	s := w.s
	var err error
	w.completed, err = s.sendParts(ctx, f, s.FinishedKey(w.id, w.pi.Name), w.pi.UploadID, w.held, pass)
	if err != nil && err != errUploadGone && ctx.Err() == nil {
		// A server may answer a part of an upload completed meanwhile by resetting the
		// connection: ask whether the multipart upload is still there.
		if _, perr := s.parts(ctx, w.id, w.pi.Name, w.pi.UploadID); fault.CodeOf(perr) == fault.UploadMissing {
			err = errUploadGone
		}
	}
	if err == errUploadGone {
		return store.ErrWriteGone
	}
	return err
}

// Complete completes the multipart upload create-only (If-None-Match: *); an empty source, with
// no part to send, is a create-only put of nothing.
func (w *multipartWrite) Complete(ctx context.Context) (bool, error) {
	s := w.s
	key := s.FinishedKey(w.id, w.pi.Name)
	var err error
	if w.pi.Size == 0 {
		_, err = s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: bytes.NewReader(nil),
			Metadata: map[string]string{"blake3": w.pi.Blake3}, IfNoneMatch: aws.String("*")})
		s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket, Key: &key, UploadId: &w.pi.UploadID})
	} else {
		_, err = s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: &s.Bucket, Key: &key,
			UploadId: &w.pi.UploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: w.completed}, IfNoneMatch: aws.String("*")})
	}
	switch {
	case conflict(err) || notFound(err): // completed by another run meanwhile
		return false, nil
	case err != nil:
		return false, s.wrap(fault.UploadUnreadable, key, err)
	}
	return true, nil
}

// errUploadGone: the multipart upload went away while its parts were sent.
var errUploadGone = errors.New("the multipart upload is gone")

// beginStage begins a multipart upload with the BLAKE3 in its metadata, for store.Notes.Start,
// which writes its info and the source's note after it (a kill between leaves a multipart upload
// that sweep aborts).
func (s *Store) beginStage(ctx context.Context, name string, size int64, want string) func(id string) (*partialInfo, error) {
	return func(id string) (*partialInfo, error) {
		mp, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket,
			Key: aws.String(s.FinishedKey(id, name)), Metadata: map[string]string{"blake3": want}})
		if err != nil {
			return nil, s.wrap(fault.UploadUnreadable, name, err)
		}
		return &partialInfo{Name: name, Size: size, Made: nowString(), UploadID: aws.ToString(mp.UploadId), Blake3: want}, nil
	}
}

// partsHeld is the parts the server holds of the multipart upload of pi, by number:
// upload.missing when it is not there any more.
func (s *Store) partsHeld(ctx context.Context, id string, pi *partialInfo) (map[int32]part, error) {
	ps, err := s.parts(ctx, id, pi.Name, pi.UploadID)
	if err != nil {
		return nil, err
	}
	held := map[int32]part{}
	for _, p := range ps {
		held[p.Number] = p
	}
	return held, nil
}

// noteStore is the S3 store's primitives for the source-note rules (store.Notes), beside its small
// objects, where the notes and the infos are (P/.attachctl/partial/<id>/info).
type noteStore struct{ s *Store }

func (n noteStore) DropPartial(ctx context.Context, id string, pi *partialInfo) {
	n.s.dropPartial(ctx, id, pi)
}

func (n noteStore) HeadFinished(ctx context.Context, id, name string) (*store.Info, error) {
	return n.s.head(ctx, id, name)
}

// TidyFinished removes the info of the upload another run finished and aborts this run's
// multipart upload of it: a part sent after the other run's completion can make a server
// (versitygw's posix backend) hold the multipart upload again, and nothing of it is wanted.
func (n noteStore) TidyFinished(ctx context.Context, id string, pi *partialInfo) {
	s := n.s
	s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(s.infoKey(id))})
	if pi.UploadID != "" {
		s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, pi.Name)), UploadId: &pi.UploadID})
	}
}

// putMultipart writes size bytes of src as a new multipart upload of key, its BLAKE3 sum in the
// metadata, parts of DefaultChunk bytes sent treePartJobs at once, and completes it (create-only
// when told) once check takes the BLAKE3 of the bytes sent. Anything failed, it is aborted.
func (s *Store) putMultipart(ctx context.Context, key, sum string, src store.SourceFile, size int64, createOnly bool, check func(sent string) error) error {
	mp, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key,
		Metadata: map[string]string{"blake3": sum}})
	if err != nil {
		return err
	}
	h := blake3.New()
	parts, err := s.sendParts(ctx, src, key, aws.ToString(mp.UploadId), nil, store.StreamPass{Size: size, Chunk: DefaultChunk,
		Jobs: treePartJobs, Hash: h, Observe: func([]byte) {}, Progress: func(int64) {}})
	if err == nil {
		err = check(hex.EncodeToString(h.Sum(nil)))
	}
	if err == nil {
		in := &awss3.CompleteMultipartUploadInput{Bucket: &s.Bucket, Key: &key, UploadId: mp.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}
		if createOnly {
			in.IfNoneMatch = aws.String("*")
		}
		_, err = s.client.CompleteMultipartUpload(ctx, in)
	}
	if err == errUploadGone {
		err = fault.Errorf(fault.UploadUnreadable, "store %s: %s: its multipart upload went away (a sweep?)", s.URI, key)
	}
	if err != nil {
		s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket, Key: &key, UploadId: mp.UploadId})
	}
	return err
}

// sendParts sends the source f as the parts of the multipart upload uploadID of key in the pass
// of store.Pump (read here, hash on another core), each part the server does not already hold
// with the same bytes (held: its ETag is the MD5 of the source's) on a goroutine of its own.
// Buffers go round the Store's pool (buffers), and a part holds its buffer until it is sent: so
// at most that many parts are in flight, and at most jobs x chunk bytes are in memory. It returns
// the parts for the completion.
func (s *Store) sendParts(ctx context.Context, f store.SourceFile, key, uploadID string, held map[int32]part, pass store.StreamPass) ([]types.CompletedPart, error) {
	chunk := pass.Chunk
	done := make([]types.CompletedPart, (pass.Size+chunk-1)/chunk)
	// A part's failure stops the sending of more, but does not cut the parts in flight: the
	// server goes on with a part whose client gave up, and one it takes after the caller aborted
	// the multipart upload makes it hold the upload again (versitygw's posix backend). So every
	// part sent is answered before this returns; only the caller's cancel cuts them.
	send := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	err := store.Pump(ctx, f, 0, pass, s.buffers(pass.Jobs, chunk), func(off int64, b []byte, release func()) error {
		n := int32(off/chunk) + 1
		if p, ok := held[n]; ok && p.Size == int64(len(b)) && p.ETag == md5hex(b) {
			done[n-1] = types.CompletedPart{PartNumber: aws.Int32(n), ETag: aws.String(`"` + p.ETag + `"`)}
			release()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer release()
			out, err := s.client.UploadPart(send, &awss3.UploadPartInput{Bucket: &s.Bucket, Key: &key, UploadId: &uploadID,
				PartNumber: aws.Int32(n), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}, unsignedPayload)
			if notFound(err) {
				cancel(errUploadGone)
			} else if err != nil {
				cancel(s.wrap(fault.UploadUnreadable, "part of "+key, err))
			} else {
				done[n-1] = types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag}
			}
		}()
		return nil
	})
	wg.Wait()
	if err == nil || ctx.Err() != nil {
		err = context.Cause(ctx) // a part's failure, or the caller's cancel
	}
	if err != nil {
		return nil, err
	}
	return done, nil
}

func md5hex(b []byte) string {
	m := md5.Sum(b)
	return hex.EncodeToString(m[:])
}
