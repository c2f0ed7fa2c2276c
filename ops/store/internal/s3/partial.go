package s3

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

var _ store.Backend = (*Store)(nil)

// Location is s3://BUCKET/PREFIX.
func (s *Store) Location() string { return s.URI }

// partialInfo is P/.attachctl/partial/<id>/info.
type partialInfo struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"` // -1: open
	Made     string `json:"made"` // RFC 3339, UTC
	UploadID string `json:"uploadId,omitempty"`
	Blake3   string `json:"blake3,omitempty"`
	Kind     string `json:"kind,omitempty"` // "folder": a folder upload's (tree.go)
	Note     string `json:"note,omitempty"` // a folder upload's: its source note (the key's hex)
}

// Of is what the upload was begun for (store.NotePartial): a stream's has a multipart upload.
func (pi *partialInfo) Of() store.PartialOf {
	return store.PartialOf{Name: pi.Name, Blake3: pi.Blake3, Folder: pi.Kind == store.KindFolder, Streamed: pi.UploadID != ""}
}

// Declared and Sized are its size for the step-by-step upload (store.ChunkInfo).
func (pi *partialInfo) Declared() int64 { return pi.Size }

func (pi *partialInfo) Sized(n int64) *partialInfo {
	fixed := *pi
	fixed.Size = n
	return &fixed
}

func (s *Store) infoKey(id string) string    { return s.key(internalDir, "partial", id, "info") }
func (s *Store) partialDir(id string) string { return s.key(internalDir, "partial", id) + "/" }

// checkStore tells whether the prefix is a store, and with create makes it one (store.MarkCheck).
func (s *Store) checkStore(ctx context.Context, create bool) (bool, error) {
	return s.check.Check(ctx, create)
}

// look lists the top of a prefix that has no mark, for store.Judge: one page of folders (common
// prefixes) and objects.
func (s *Store) look(ctx context.Context) (store.Seen, error) {
	out, err := s.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: aws.String(s.root()),
		Delimiter: aws.String("/"), MaxKeys: aws.Int32(store.JudgeNames)})
	if err != nil {
		return store.Seen{}, s.wrap(fault.StoreUnreachable, "list", err)
	}
	var seen store.Seen
	for _, p := range out.CommonPrefixes {
		seen.Names = append(seen.Names, store.TopEntry{Name: strings.TrimSuffix(strings.TrimPrefix(aws.ToString(p.Prefix), s.root()), "/"), Dir: true})
	}
	for _, o := range out.Contents {
		seen.Names = append(seen.Names, store.TopEntry{Name: strings.TrimPrefix(aws.ToString(o.Key), s.root())})
	}
	return seen, nil
}

// condPut is a conditional write of key over what was read there: If-Match its ETag, or
// If-None-Match: * when there was nothing (etag ""); none for store.AnyVersion.
func condPut(key, etag string) *awss3.PutObjectInput {
	switch etag {
	case "":
		return &awss3.PutObjectInput{Key: &key, IfNoneMatch: aws.String("*")}
	case store.AnyVersion:
		return &awss3.PutObjectInput{Key: &key}
	}
	return &awss3.PutObjectInput{Key: &key, IfMatch: aws.String(etag)}
}

// Exists reports whether the prefix is a store, marked or not (store.Judge). A prefix that holds
// nothing is a store that does not exist yet (verify, ls, rm, touch and resolve exit 10 on it);
// one that holds other objects is store.notStore.
func (s *Store) Exists(ctx context.Context) (bool, error) {
	return s.checkStore(ctx, false)
}

// exists checks the upload id, then the store for readers (store.MarkCheck.Holds).
func (s *Store) exists(ctx context.Context, id string) error { return s.check.Holds(ctx, id) }

func nowString() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// object is a small object as read whole.
type object struct {
	body     []byte
	etag     string
	modified time.Time
	meta     map[string]string
}

// readObjectUpTo reads an object, its first n bytes at most.
func (s *Store) readObjectUpTo(ctx context.Context, key string, n int64) (object, error) {
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.Bucket, Key: &key})
	if err != nil {
		return object{}, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, n))
	return object{body: b, etag: aws.ToString(out.ETag), modified: aws.ToTime(out.LastModified), meta: out.Metadata}, err
}

// putOwn is a conditional write (in, of body) that knows its own write. One the server took whose
// answer was lost (a read timeout, a broken connection) is tried again by the SDK and refused, the
// object being there or its ETag having moved: so a refused write reads the object back, and
// counts as done when what it finds is this write: the same nonce in its metadata
// (x-amz-meta-nonce) when in carries one (a lease), else the same bytes (a use marker's body
// carries its nonce, a source note names the upload just begun, a reservation its holder; the
// other keys written so are new; a chunk, read back whole, is its bytes at its offset, the same
// bytes whoever wrote them). It returns the object written (its ETag); refused, the refusal and
// the object found (etag "" when it could not be read).
func (s *Store) putOwn(ctx context.Context, in *awss3.PutObjectInput, body []byte) (object, error) {
	in.Bucket, in.Body = &s.Bucket, bytes.NewReader(body)
	out, err := s.client.PutObject(ctx, in)
	if err == nil {
		return object{body: body, etag: aws.ToString(out.ETag), meta: in.Metadata}, nil
	}
	// Read back too when the last try got no answer (a broken connection, a 5xx, which every
	// try met): a server may refuse a create-only PUT before reading its body and reset the
	// connection while the body is still being sent, so the refusal of a retry whose first try
	// was taken never arrives.
	if st := httpStatus(err); !conflict(err) && st != 0 && st < 500 {
		return object{}, err
	}
	found, rerr := s.readObjectUpTo(ctx, aws.ToString(in.Key), max(1<<20, int64(len(body))+1))
	if rerr != nil {
		return object{}, err
	}
	if nonce := in.Metadata[store.LeaseNonceKey]; nonce != "" && found.meta[store.LeaseNonceKey] == nonce || nonce == "" && bytes.Equal(found.body, body) {
		return found, nil // an earlier attempt of this write, whose answer was lost
	}
	return found, err
}

// readInfo reads the info of the unfinished upload id (store.ReadInfo).
func (s *Store) readInfo(ctx context.Context, id string) (*partialInfo, error) {
	return store.ReadInfo[*partialInfo](ctx, objects{s}, id, s.URI)
}

// listObjects calls f for every object under prefix, page by page.
func (s *Store) listObjects(ctx context.Context, prefix string, f func(types.Object) error) error {
	p := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if err := f(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// Begin starts an unfinished step-by-step upload, which has no source note (store.Notes.Start).
func (s *Store) Begin(ctx context.Context, name string, size int64) (string, error) {
	if err := store.CheckBegin(name, size); err != nil {
		return "", err
	}
	if _, err := s.checkStore(ctx, true); err != nil {
		return "", err
	}
	id, _, err := s.notes.Start(ctx, "", "", name, size, func(string) (*partialInfo, error) {
		return &partialInfo{Name: name, Size: size, Made: nowString()}, nil
	})
	return id, err
}

// Write appends r as one chunk object, created only if no writer took that offset first
// (store.WriteChunk).
func (s *Store) Write(ctx context.Context, id string, offset int64, r io.Reader) (int64, error) {
	return store.WriteChunk(ctx, s.stepChunks(), id, offset, r)
}

// Status reports an upload, finished or not (store.StatusOf).
func (s *Store) Status(ctx context.Context, id string) (*store.Status, error) {
	if err := s.exists(ctx, id); err != nil {
		return nil, err
	}
	return store.StatusOf(ctx, s, id)
}

// PartialStatus reads the unfinished upload id for Status (store.StatusBackend): one with its
// info, as a walk of P/<id>/ and of its partial show it now.
func (s *Store) PartialStatus(ctx context.Context, id string) (store.UnfinishedState, int64, error) {
	return s.up.PartialStatus(ctx, id)
}

// Finish checks and publishes a step-by-step upload create-only (store.FinishChunks).
func (s *Store) Finish(ctx context.Context, id string, size int64, sum string) (*store.Info, error) {
	return store.FinishChunks(ctx, s.stepChunks(), id, size, sum)
}

// dropPartial removes what an unfinished upload left, in the order store.ObjectRemoval's
// DropUnfinished keeps.
func (s *Store) dropPartial(ctx context.Context, id string, pi *partialInfo) error {
	var di *store.DroppedInfo
	if pi != nil {
		di = &store.DroppedInfo{Folder: pi.Kind == store.KindFolder, Note: pi.Note, Name: pi.Name, UploadID: pi.UploadID}
	}
	return s.removal.DropUnfinished(ctx, id, di)
}

// abortStream aborts the multipart upload of the stream id (store.ObjectRemoval.Abort).
func (s *Store) abortStream(ctx context.Context, id, name, uploadID string) error {
	_, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.Bucket,
		Key: aws.String(s.FinishedKey(id, name)), UploadId: &uploadID})
	if notFound(err) {
		return nil
	}
	return s.wrap(fault.UploadUnreadable, "abort "+id, err)
}

// deleteKeys removes keys with DeleteObjects, a thousand at a time (S3's most).
func (s *Store) deleteKeys(ctx context.Context, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		objs := make([]types.ObjectIdentifier, n)
		for i, k := range keys[:n] {
			objs[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := s.client.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: &s.Bucket,
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil {
			return s.wrap(fault.UploadUnreadable, "delete", err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fault.Errorf(fault.UploadUnreadable, "store %s: delete %s: %s: %s", s.URI, aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		keys = keys[n:]
	}
	return nil
}

// Abort removes an unfinished upload (store.AbortChunks).
func (s *Store) Abort(ctx context.Context, id string) error {
	return store.AbortChunks(ctx, s.stepChunks(), id)
}
