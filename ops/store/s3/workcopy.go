package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/zeebo/blake3"
)

// DefaultWorkdir is where an S3 store's working copies go unless told: the XDG cache, one folder
// per store (its bucket and prefix, with slashes made plain).
func DefaultWorkdir(s *Store) (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	name := s.Bucket
	if s.Prefix != "" {
		name += "/" + s.Prefix
	}
	return filepath.Join(base, "attachctl", "work", "s3", filepath.FromSlash(name)), nil
}

// Resolve resolves a prompt against the S3 store as SPEC section 6 says, handing the agent
// working copies: each upload the prompt names is copied into workdir (laid out as a local store:
// workdir/<id>/<name>, read-only), its BLAKE3 checked against the object's metadata, and reused on
// a later resolve while it still hashes right. The prompt is then resolved against those copies
// by the local store's resolver, so every rule of section 6 is the same, and the links name the
// copies. The uploads are marked used on the server last; one that a sweep took meanwhile is
// upload.missing and the prompt is refused.
func (s *Store) Resolve(ctx context.Context, input []byte, workdir string, opts ops.ResolveOptions) (*ops.Resolution, error) {
	refs := references(input)
	ws, err := ops.Open(workdir, true)
	if err != nil {
		return nil, err
	}
	if ok, err := s.checkStore(ctx, false); err != nil {
		return nil, err
	} else if ok {
		err = forEach(ctx, len(refs), func(i int) error {
			err := s.workCopy(ctx, ws, refs[i].id, refs[i].name)
			if manifest.CodeOf(err) == manifest.UploadMissing {
				return nil // the resolver says so, in its words, for the whole prompt
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	res, err := ws.Resolve(input, opts)
	if err != nil {
		return nil, err
	}
	at := opts.Now
	if at.IsZero() {
		at = time.Now()
	}
	if err := s.MarkUsed(ctx, res.IDs, at); err != nil {
		return nil, err
	}
	return res, nil
}

type ref struct{ id, name string }

// references finds the upload references of a prompt (any object with _meta.acpmux.upload),
// keeping only plain ids and names; the resolver judges the rest.
func references(input []byte) []ref {
	var doc any
	if json.Unmarshal(input, &doc) != nil {
		return nil
	}
	seen := map[ref]bool{}
	var refs []ref
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			if m, ok := v["_meta"].(map[string]any); ok {
				if a, ok := m["acpmux"].(map[string]any); ok {
					if u, ok := a["upload"].(map[string]any); ok {
						id, _ := u["uploadId"].(string)
						name, _ := u["fileName"].(string)
						r := ref{id, name}
						if store.ValidID(id) == nil && store.ValidName(name) == nil && !seen[r] {
							seen[r] = true
							refs = append(refs, r)
						}
					}
				}
			}
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return refs
}

// workCopy makes sure ws holds an intact copy of the upload. A copy that still hashes to the
// BLAKE3 recorded when it was fetched is reused without asking the server: a finished object is
// never replaced and an id never reused, so those are the upload's bytes (whether the upload is
// still there is for MarkUsed to say). Otherwise it is fetched into a fresh folder, checked, and
// renamed into place.
func (s *Store) workCopy(ctx context.Context, ws *ops.Store, id, name string) error {
	if m, err := ws.ReadMeta(id); err == nil && m.Name == name {
		if f, err := ws.OpenFinished(id, name); err == nil {
			got, _, herr := ops.Hash(f, nil)
			f.Close()
			if herr == nil && got == m.Blake3 {
				return nil
			}
		}
	}
	tmp := filepath.Join(ws.Dir, ops.InternalDir, "fetch-"+randHex())
	if err := ops.MkdirAll(tmp); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	info, err := s.fetch(ctx, id, name, filepath.Join(tmp, name))
	if err != nil {
		return err
	}
	meta, err := json.Marshal(ops.Meta{ID: id, Name: name, Size: info.Size, Blake3: info.Blake3, Made: info.Made})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, ops.MetaName), meta, 0o400); err != nil {
		return manifest.Errorf(manifest.UploadUnreadable, "working copy of %s: %v", id, err)
	}
	os.Chmod(filepath.Join(tmp, ops.MetaName), 0o400)
	dst := ws.UploadDir(id)
	if err := os.Rename(tmp, dst); err != nil {
		// A copy that is there and not intact goes; then this one takes its place.
		old := filepath.Join(ws.Dir, ops.InternalDir, "stale-"+randHex())
		if rerr := os.Rename(dst, old); rerr == nil {
			os.RemoveAll(old)
			err = os.Rename(tmp, dst)
		}
		if err != nil && !errors.Is(err, os.ErrExist) {
			return manifest.Errorf(manifest.UploadUnreadable, "working copy of %s: %v", id, err)
		}
	}
	return nil
}

// fetch streams the object into path (created 0400, never through a link), hashing as it goes,
// and checks the bytes against the BLAKE3 in the object's metadata.
func (s *Store) fetch(ctx context.Context, id, name, path string) (*store.Info, error) {
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.Bucket, Key: aws.String(s.FinishedKey(id, name))})
	if err != nil {
		if notFound(err) {
			return nil, s.missing(id)
		}
		return nil, s.wrap(manifest.UploadUnreadable, "upload "+id, err)
	}
	defer out.Body.Close()
	info, err := s.infoOf(id, name, aws.ToInt64(out.ContentLength), out.Metadata, out.LastModified)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "working copy %s: %v", path, err)
	}
	h := blake3.New()
	n, err := io.Copy(io.MultiWriter(f, h), out.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, manifest.Errorf(manifest.UploadUnreadable, "working copy %s: %v", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != info.Blake3 || n != info.Size {
		return nil, manifest.Errorf(manifest.VerifyMismatch, "upload %s: read %d bytes hashing to %s; its metadata says %d bytes, %s", id, n, got, info.Size, info.Blake3)
	}
	return info, os.Chmod(path, 0o400)
}

func randHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
