package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/zeebo/blake3"
)

// part is one part of a multipart upload as the server holds it.
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
	in := &awss3.ListPartsInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, name)), UploadId: &uploadID}
	for {
		out, err := s.client.ListParts(ctx, in)
		if err != nil {
			if notFound(err) {
				return nil, manifest.Errorf(manifest.UploadMissing, "upload %s: its multipart upload is gone from store %s", id, s.URI)
			}
			return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
		}
		for _, p := range out.Parts {
			ps = append(ps, part{Number: aws.ToInt32(p.PartNumber), Size: aws.ToInt64(p.Size), ETag: strings.Trim(aws.ToString(p.ETag), `"`), Modified: aws.ToTime(p.LastModified)})
		}
		if !aws.ToBool(out.IsTruncated) {
			return ps, nil
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
}

// UploadOptions tune the upload stage.
type UploadOptions struct {
	Chunk    int64         // part size; 0 is DefaultChunk; at least MinChunk
	Jobs     int           // parts sent at once; at most Jobs x Chunk bytes of parts are in memory
	Progress func(int64)   // bytes read from the source so far, as they go
	Sent     func(n int32) // a part about to be sent (tests count them)
	// Buffers, when set, is the pool of part buffers (each Chunk bytes) that several uploads at
	// once share, so that the bound on memory holds for the whole command; nil: Jobs of its own.
	Buffers chan []byte
}

// NewBuffers is a pool of jobs part buffers of chunk bytes for UploadOptions.Buffers. They are
// made when first taken.
func NewBuffers(jobs int, chunk int64) chan []byte {
	pool := make(chan []byte, jobs)
	for i := 0; i < jobs; i++ {
		pool <- nil
	}
	return pool
}

// sourceNote is P/.attachctl/source/<key>.
type sourceNote struct {
	ID string `json:"id"`
}

func (s *Store) noteKey(abs, name string, size int64, sum string) string {
	h := sha256.New()
	for _, f := range []string{abs, name, sum} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	h.Write(strconv.AppendInt(nil, size, 10))
	return s.key(internalDir, "source", hex.EncodeToString(h.Sum(nil)))
}

// UploadRecord puts the file rec names into the store as a multipart upload of its finished key,
// parts sent opts.Jobs at once, and sets rec.Upload. The BLAKE3 goes into the object's metadata,
// so it must be known before the first byte is sent: a record without one (no sniff before)
// costs one read of the file first. A killed run, run again with the same file, finds its
// multipart upload through the source note and sends only the parts the server does not hold
// with the same bytes (each held part's ETag is compared with the MD5 of the file's bytes). The
// completion is create-only (If-None-Match: *).
func (s *Store) UploadRecord(ctx context.Context, rec *manifest.Record, opts UploadOptions) error {
	chunk := opts.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	if chunk < MinChunk {
		return manifest.Errorf(manifest.UploadInvalid, "--chunk %d: S3 takes parts of at least %d bytes", chunk, MinChunk)
	}
	jobs := max(opts.Jobs, 1)
	progress := opts.Progress
	if progress == nil {
		progress = func(int64) {}
	}
	abs, name, want, err := ops.Source(rec)
	if err != nil {
		return err
	}
	src, err := os.Open(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return manifest.Errorf(manifest.FileMissing, "%s: no such file", abs)
		}
		return manifest.Errorf(manifest.FileUnreadable, "%s: %v", abs, err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return manifest.Errorf(manifest.FileNotRegular, "%s: not a regular file", abs)
	}
	size := fi.Size()
	if want == "" {
		if want, _, err = ops.Hash(src, nil); err != nil {
			return manifest.Errorf(manifest.FileUnreadable, "%s: %v", abs, err)
		}
		if _, err := src.Seek(0, io.SeekStart); err != nil {
			return manifest.Errorf(manifest.FileUnreadable, "%s: %v", abs, err)
		}
	}
	if _, err := s.checkStore(ctx, true); err != nil {
		return err
	}
	note := s.noteKey(abs, name, size, want)
	id, pi, held := s.resumable(ctx, note, name, want)
	if id != "" && pi == nil { // finished by an earlier run
		progress(size)
		s.setUpload(rec, id, name, size, want)
		return nil
	}
	if pi == nil {
		if id, pi, err = s.startStage(ctx, note, name, size, want); err != nil {
			return err
		}
	}
	key := s.FinishedKey(id, name)
	if size == 0 {
		// No part to send; a create-only put of nothing.
		_, err = s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: bytes.NewReader(nil),
			Metadata: map[string]string{"blake3": want}, IfNoneMatch: aws.String("*")})
		if err != nil && !conflict(err) {
			return s.wrap(manifest.UploadUnreadable, abs, err)
		}
		s.dropPartial(ctx, id, pi)
		s.setUpload(rec, id, name, 0, want)
		return nil
	}
	free := opts.Buffers
	if free == nil {
		free = NewBuffers(jobs, chunk)
	}
	done, got, err := s.sendParts(ctx, src, size, chunk, jobs, free, id, pi, held, progress, opts.Sent)
	if err != nil {
		return err
	}
	if got != want {
		// The file changed since it was hashed: what was sent is not what the record names.
		s.dropPartial(ctx, id, pi)
		s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: &note})
		return manifest.Errorf(manifest.UploadHashMismatch, "%s: BLAKE3 is %s, the manifest says %s (changed since it was sniffed)", abs, got, want)
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: &s.Bucket, Key: &key,
		UploadId: &pi.UploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}, IfNoneMatch: aws.String("*")})
	if err != nil && !conflict(err) {
		return s.wrap(manifest.UploadUnreadable, abs, err)
	}
	if err != nil { // completed by another run meanwhile: it must be these bytes
		info, ierr := s.head(ctx, id, name)
		if ierr != nil {
			return ierr
		}
		if info.Blake3 != want {
			return manifest.Errorf(manifest.UploadHashMismatch, "%s: upload %s was finished by another run with BLAKE3 %s", abs, id, info.Blake3)
		}
	}
	// The note stays, so that the same file uploaded again is named again; the info goes.
	s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(s.infoKey(id))})
	s.setUpload(rec, id, name, size, want)
	return nil
}

func (s *Store) setUpload(rec *manifest.Record, id, name string, size int64, sum string) {
	rec.Name, rec.Blake3 = name, sum
	rec.SetSize(size)
	rec.Upload = &manifest.Upload{ID: id, Store: s.URI, Path: s.FinishedURI(id, name)}
}

// resumable looks up the note of a source: the id of a finished upload of it (pi nil), or of a
// multipart upload to resume with the parts the server holds, or nothing.
func (s *Store) resumable(ctx context.Context, note, name, want string) (string, *partialInfo, map[int32]part) {
	b, _, _, err := s.getObject(ctx, note)
	if err != nil {
		return "", nil, nil
	}
	var n sourceNote
	if json.Unmarshal(b, &n) != nil || store.ValidID(n.ID) != nil {
		return "", nil, nil
	}
	pi, err := s.readInfo(ctx, n.ID)
	if err != nil {
		if info, herr := s.head(ctx, n.ID, name); herr == nil && info.Blake3 == want && s.intact(ctx, n.ID, name, want) {
			return n.ID, nil, nil
		}
		return "", nil, nil
	}
	if pi.UploadID == "" || pi.Blake3 != want || pi.Name != name {
		return "", nil, nil
	}
	ps, err := s.parts(ctx, n.ID, name, pi.UploadID)
	if err != nil {
		return "", nil, nil
	}
	held := map[int32]part{}
	for _, p := range ps {
		held[p.Number] = p
	}
	return n.ID, pi, held
}

// intact reports whether the finished object id still holds the bytes of BLAKE3 want: read back
// whole, once, before a source is named by an upload already there, so that a corrupted upload
// is never named again (the source is sent afresh, under a new id, which repairs it).
func (s *Store) intact(ctx context.Context, id, name, want string) bool {
	r, err := s.Open(ctx, id, name)
	if err != nil {
		return false
	}
	defer r.Close()
	got, _, err := ops.Hash(r, nil)
	return err == nil && got == want
}

// startStage begins a multipart upload with the BLAKE3 in its metadata, then writes its info and
// the source's note (a kill between leaves a multipart upload that sweep aborts).
func (s *Store) startStage(ctx context.Context, note, name string, size int64, want string) (string, *partialInfo, error) {
	if err := s.admit(ctx, name, size); err != nil { // the store's limits, before anything is sent
		return "", nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return "", nil, err
	}
	key := s.FinishedKey(id, name)
	mp, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key,
		Metadata: map[string]string{"blake3": want}})
	if err != nil {
		return "", nil, s.wrap(manifest.UploadUnreadable, name, err)
	}
	pi := &partialInfo{Name: name, Size: size, Made: nowString(), UploadID: aws.ToString(mp.UploadId), Blake3: want}
	if err := s.putJSON(ctx, s.infoKey(id), pi, true); err != nil {
		return "", nil, s.wrap(manifest.UploadUnreadable, name, err)
	}
	if err := s.putJSON(ctx, note, sourceNote{ID: id}, false); err != nil {
		return "", nil, s.wrap(manifest.UploadUnreadable, name, err)
	}
	return id, pi, nil
}

// sendParts reads the source once, in order, hashing it, and sends each part the server does not
// already hold with the same bytes, jobs at once. Buffers go round a pool of jobs, so at most
// jobs x chunk bytes are in memory. It returns the parts for the completion and the BLAKE3.
func (s *Store) sendParts(ctx context.Context, src *os.File, size, chunk int64, jobs int, free chan []byte, id string, pi *partialInfo, held map[int32]part, progress func(int64), sent func(int32)) ([]types.CompletedPart, string, error) {
	key := s.FinishedKey(id, pi.Name)
	nparts := int((size + chunk - 1) / chunk)
	done := make([]types.CompletedPart, nparts)
	type job struct {
		n   int32
		buf []byte
	}
	work := make(chan job)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if sent != nil {
					sent(j.n)
				}
				out, err := s.client.UploadPart(ctx, &awss3.UploadPartInput{Bucket: &s.Bucket, Key: &key, UploadId: &pi.UploadID,
					PartNumber: aws.Int32(j.n), Body: bytes.NewReader(j.buf), ContentLength: aws.Int64(int64(len(j.buf)))}, unsignedPayload)
				if err != nil {
					cancel(s.wrap(manifest.UploadUnreadable, "upload "+id+" part", err))
				} else {
					done[j.n-1] = types.CompletedPart{PartNumber: aws.Int32(j.n), ETag: out.ETag}
				}
				free <- j.buf[:cap(j.buf)]
			}
		}()
	}
	h := blake3.New()
	var readErr error
	var pos int64
	for n := int32(1); int(n) <= nparts && ctx.Err() == nil; n++ {
		var buf []byte
		got := false
		select {
		case buf = <-free:
			got = true
		case <-ctx.Done():
		}
		if !got {
			break
		}
		if int64(cap(buf)) < chunk {
			buf = make([]byte, chunk)
		}
		k := min(chunk, size-pos)
		if _, err := io.ReadFull(src, buf[:k]); err != nil {
			free <- buf
			readErr = manifest.Errorf(manifest.FileChanged, "%s: shorter than its %d bytes: %v", src.Name(), size, err)
			break
		}
		buf = buf[:k]
		h.Write(buf)
		pos += k
		progress(k)
		if p, ok := held[n]; ok && p.Size == k && p.ETag == md5hex(buf) {
			done[n-1] = types.CompletedPart{PartNumber: aws.Int32(n), ETag: aws.String(`"` + p.ETag + `"`)}
			free <- buf[:cap(buf)]
			continue
		}
		select {
		case work <- job{n, buf}:
		case <-ctx.Done():
			free <- buf[:cap(buf)]
		}
	}
	close(work)
	wg.Wait()
	if readErr != nil {
		return nil, "", readErr
	}
	if err := context.Cause(ctx); err != nil {
		return nil, "", err
	}
	return done, hex.EncodeToString(h.Sum(nil)), nil
}

func md5hex(b []byte) string {
	m := md5.Sum(b)
	return hex.EncodeToString(m[:])
}
