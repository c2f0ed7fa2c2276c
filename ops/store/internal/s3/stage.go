package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
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
		w := &store.MultipartWrite{M: s.multipart(s.FinishedKey(id, pi.Name), pi.UploadID, pi.Blake3),
			Free: func(pass store.StreamPass) chan []byte { return s.buffers(pass.Jobs, pass.Chunk) }}
		var err error
		if resumed {
			w.Kept, err = s.partsHeld(ctx, id, pi)
		}
		return w, err
	})
}

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
func (s *Store) partsHeld(ctx context.Context, id string, pi *partialInfo) (map[int32]store.Part, error) {
	ps, err := s.parts(ctx, id, pi.Name, pi.UploadID)
	if err != nil {
		return nil, err
	}
	held := map[int32]store.Part{}
	for _, p := range ps {
		held[p.Number] = store.Part{N: p.Number, Size: p.Size, Tag: p.ETag}
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
// metadata, parts of DefaultChunk bytes sent treePartJobs at once (store.PutParts). The server's
// refusal to begin it is returned as it is, for the caller to code.
func (s *Store) putMultipart(ctx context.Context, key, sum string, src store.SourceFile, size int64, createOnly bool, check func(sent string) error) error {
	mp, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key,
		Metadata: map[string]string{"blake3": sum}})
	if err != nil {
		return err
	}
	return store.PutParts(ctx, s.multipart(key, aws.ToString(mp.UploadId), sum), "store "+s.URI+": "+key, src, size, DefaultChunk,
		treePartJobs, s.buffers(treePartJobs, DefaultChunk), createOnly, check)
}

// multipart is the multipart upload uploadID of key (store.PartUpload), the object's BLAKE3 sum in
// its metadata.
func (s *Store) multipart(key, uploadID, sum string) partUpload {
	return partUpload{s: s, key: key, upload: uploadID, sum: sum}
}

type partUpload struct {
	s                *Store
	key, upload, sum string
}

// Send sends a part with no SHA-256 of its bytes (unsignedPayload): its ETag is checked on resume.
func (m partUpload) Send(ctx context.Context, n int32, b []byte) (store.Part, error) {
	s := m.s
	out, err := s.client.UploadPart(ctx, &awss3.UploadPartInput{Bucket: &s.Bucket, Key: &m.key, UploadId: &m.upload,
		PartNumber: aws.Int32(n), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}, unsignedPayload)
	if notFound(err) {
		return store.Part{}, store.ErrNoObject
	} else if err != nil {
		return store.Part{}, s.wrap(fault.UploadUnreadable, "part of "+m.key, err)
	}
	return store.Part{N: n, Size: int64(len(b)), Tag: strings.Trim(aws.ToString(out.ETag), `"`)}, nil
}

// Tag: a part's ETag is the MD5 of its bytes.
func (m partUpload) Tag(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Complete completes the multipart upload; one of no part (an empty source: a multipart upload
// takes at least one) is a put of nothing instead, and the multipart upload is aborted.
func (m partUpload) Complete(ctx context.Context, parts []store.Part, createOnly bool) error {
	s := m.s
	var none *string
	if createOnly {
		none = aws.String("*")
	}
	var err error
	if len(parts) == 0 {
		_, err = s.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: &m.key, Body: bytes.NewReader(nil),
			Metadata: map[string]string{"blake3": m.sum}, IfNoneMatch: none})
		m.Abort(ctx)
	} else {
		done := make([]types.CompletedPart, len(parts))
		for i, p := range parts {
			done[i] = types.CompletedPart{PartNumber: aws.Int32(p.N), ETag: aws.String(`"` + p.Tag + `"`)}
		}
		_, err = s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: &s.Bucket, Key: &m.key,
			UploadId: &m.upload, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}, IfNoneMatch: none})
	}
	switch {
	case createOnly && conflict(err):
		return store.ErrObjectChanged
	case notFound(err):
		return store.ErrNoObject
	}
	return s.wrap(fault.UploadUnreadable, m.key, err)
}

func (m partUpload) Abort(ctx context.Context) {
	m.s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &m.s.Bucket, Key: &m.key, UploadId: &m.upload})
}

// Gone asks the server whether the multipart upload is still there.
func (m partUpload) Gone(ctx context.Context) bool {
	_, err := m.s.client.ListParts(ctx, &awss3.ListPartsInput{Bucket: &m.s.Bucket, Key: &m.key, UploadId: &m.upload, MaxParts: aws.Int32(1)})
	return notFound(err)
}
