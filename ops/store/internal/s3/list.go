package s3

import (
	"context"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// List returns every upload, the rules written once (store.ObjectUploads.List) over the
// primitives below: one ListObjectsV2 walk of the prefix, which shows every upload's objects with
// their sizes (a HEAD of each finished upload, and a GET of each marker, which carries the last
// use), and one listing of the multipart uploads; an unfinished upload is read from them with a
// GET of its info, when it has one, and a listing of a stream's parts.
func (s *Store) List(ctx context.Context) (*store.Listing, error) {
	return s.up.List(ctx)
}

// Bounds of the listings: how many requests a listing has in flight at once (round trips, not
// work), and the objects a page of a look-up of many ids asks for (room for a few objects per
// id, never more than S3 gives at once).
const (
	listJobs         = 16
	minPage, maxPage = 64, 1000
)

// uploads is the store's uploads as store.ObjectUploads reads them (Store.up).
func (s *Store) uploads() *store.ObjectUploads {
	return &store.ObjectUploads{L: objects{s}, R: folders{objects{s}}, Loc: s.URI, Jobs: listJobs, MinPage: minPage, MaxPage: maxPage,
		Where: func(key string) string { return strings.TrimSuffix("s3://"+s.Bucket+"/"+s.key(key), "/") },
		Check: func(ctx context.Context) (bool, error) { return s.checkStore(ctx, false) },
		Info:  s.unfinishedInfo, Parts: s.partObjects}
}

// listedObject is an object as a listing gives it, its key from P/ and its version the ETag as
// listed (quoted).
func (s *Store) listedObject(o types.Object) store.FolderObject {
	return store.FolderObject{Name: strings.TrimPrefix(aws.ToString(o.Key), s.root()), Size: aws.ToInt64(o.Size),
		At: aws.ToTime(o.LastModified).UTC(), Version: aws.ToString(o.ETag)}
}

// ListObjects walks the objects under prefix (store.ObjectLister), page by page.
func (o objects) ListObjects(ctx context.Context, prefix string, each func(store.FolderObject) error) error {
	err := o.s.listObjects(ctx, o.s.key(prefix), func(obj types.Object) error { return each(o.s.listedObject(obj)) })
	return o.s.wrap("", "list "+prefix, err)
}

// ListPage is one ListObjectsV2 of at most n keys after start.
func (o objects) ListPage(ctx context.Context, prefix, start string, n int) ([]store.FolderObject, bool, error) {
	out, err := o.s.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &o.s.Bucket, Prefix: aws.String(o.s.key(prefix)),
		StartAfter: aws.String(o.s.key(start)), MaxKeys: aws.Int32(int32(n))})
	if err != nil {
		return nil, false, o.s.wrap("", "list "+prefix, err)
	}
	objs := make([]store.FolderObject, 0, len(out.Contents))
	for _, obj := range out.Contents {
		objs = append(objs, o.s.listedObject(obj))
	}
	return objs, aws.ToBool(out.IsTruncated), nil
}

// Multiparts lists the multipart uploads under prefix, page by page.
func (o objects) Multiparts(ctx context.Context, prefix string) ([]store.Multipart, error) {
	var mps []store.Multipart
	s, root := o.s, o.s.root()
	in := &awss3.ListMultipartUploadsInput{Bucket: &s.Bucket, Prefix: aws.String(s.key(prefix))}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, s.wrap(fault.StoreUnreachable, "list multipart uploads", err)
		}
		for _, u := range out.Uploads {
			id, name, ok := store.MultipartOf(strings.TrimPrefix(aws.ToString(u.Key), root))
			if ok {
				mps = append(mps, store.Multipart{ID: id, Name: name, Key: aws.ToString(u.Key), UploadID: aws.ToString(u.UploadId), At: aws.ToTime(u.Initiated).UTC()})
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return mps, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// unfinishedInfo reads the info of the unfinished upload id (store.ObjectUploads.Info).
func (s *Store) unfinishedInfo(ctx context.Context, id string) (*store.PartialInfo, *store.DroppedInfo, error) {
	pi, err := s.readInfo(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return &store.PartialInfo{PartialOf: pi.Of(), Size: pi.Size, Made: parseTime(pi.Made)},
		&store.DroppedInfo{Folder: pi.Kind == store.KindFolder, Note: pi.Note, Name: pi.Name, UploadID: pi.UploadID}, nil
}

// partObjects lists the parts of a stream's multipart upload (store.ObjectUploads.Parts).
func (s *Store) partObjects(ctx context.Context, id, name, uploadID string) ([]store.FolderObject, error) {
	ps, err := s.parts(ctx, id, name, uploadID)
	var objs []store.FolderObject
	for _, p := range ps {
		objs = append(objs, store.FolderObject{Size: p.Size, At: p.Modified})
	}
	return objs, err
}
