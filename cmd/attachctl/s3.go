package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/local"
	"github.com/attachctl/attachctl/ops/store/s3"
	"github.com/urfave/cli/v2"
)

// The S3 store's commands (SPEC section 8): with --store s3://BUCKET/PREFIX the commands below run
// these actions instead of the local store's. sweep and resolve branch in their own files, where
// their flags are read.
var s3Actions = map[string]func(c *cli.Context, s *s3.Store) error{
	"upload":        s3UploadStage,
	"upload begin":  s3Step(func(c *cli.Context, s *s3.Store) (any, error) { return s3Begin(c, s) }),
	"upload chunk":  s3Step(s3Chunk),
	"upload status": s3Step(func(c *cli.Context, s *s3.Store) (any, error) { return s.Status(c.Context, c.String("id")) }),
	"upload finish": s3Step(s3Finish),
	"upload abort":  s3Step(func(c *cli.Context, s *s3.Store) (any, error) { return nil, s.Abort(c.Context, c.String("id")) }),
	"touch":         s3Touch,
	"verify":        s3Verify,
}

// s3PathStyleFlag is the global --s3-path-style.
func s3PathStyleFlag() cli.Flag {
	return &cli.BoolFlag{Name: "s3-path-style", EnvVars: []string{"ATTACHCTL_S3_PATH_STYLE"},
		Usage: "address S3 buckets in the path (http://host/bucket/key), as most servers other than AWS need"}
}

// storeArg is --store or $ATTACHCTL_STORE as given.
func storeArg(c *cli.Context) string {
	if v := globalString(c, "store"); v != "" {
		return v
	}
	return os.Getenv("ATTACHCTL_STORE")
}

// openS3 opens the S3 store the flags name; nil when they name a folder.
func openS3(c *cli.Context, uri string) (*s3.Store, error) {
	if !s3.IsURI(uri) {
		return nil, nil
	}
	return s3.Open(c.Context, uri, s3.Options{PathStyle: globalBool(c, "s3-path-style")})
}

// backendAt is the store at dir through the store seam: an S3 store, or the local folder.
func backendAt(c *cli.Context, dir string) (store.Backend, error) {
	if s3.IsURI(dir) {
		return openS3(c, dir)
	}
	s, err := local.Open(dir, false)
	if err != nil {
		return nil, err
	}
	return s.Backend(), nil
}

// finishedAt names a finished upload: its absolute path in a local store, its s3:// URI in an S3
// store.
func finishedAt(b store.Backend, id, name string) string {
	switch b := b.(type) {
	case store.Pather:
		return b.FinishedPath(id, name)
	case interface{ FinishedURI(id, name string) string }:
		return b.FinishedURI(id, name)
	}
	return ""
}

// s3Dispatch wraps a command's action: on an S3 store it runs the S3 action of that command.
func s3Dispatch(act cli.ActionFunc) cli.ActionFunc {
	if act == nil {
		return nil
	}
	return func(c *cli.Context) error {
		if !s3.IsURI(storeArg(c)) || (c.Command.Name == "verify" && c.IsSet("check")) {
			return act(c)
		}
		f := s3Actions[s3CommandName(c)]
		if f == nil {
			return act(c)
		}
		s, err := openS3(c, storeArg(c))
		if err != nil {
			return usageError("%v", err)
		}
		return f(c, s)
	}
}

// s3CommandName is "upload begin" for `attachctl upload begin`.
func s3CommandName(c *cli.Context) string {
	var names []string
	for _, cc := range c.Lineage() {
		if cc.Command != nil && cc.Command.Name != "" && cc.Command.Name != c.App.Name {
			names = append([]string{cc.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// s3UploadStage is `attachctl upload` into an S3 store: parts of --chunk bytes (8 MiB unless
// set), --jobs parts at once over all records, sharing one pool of part buffers.
func s3UploadStage(c *cli.Context, s *s3.Store) error {
	bar := newBar(c, 0, "upload", "bytes")
	upload, err := s3Uploader(c, s, bar.Add)
	if err != nil {
		return err
	}
	return loop{stage: "upload", bar: bar, work: func(rec *manifest.Record) error {
		bar.AddTotal(rec.Size)
		return upload(rec)
	}}.toStdout(c)
}

// s3Uploader uploads one record into s: parts of --chunk bytes (8 MiB unless set), --jobs parts at
// once over all the records, sharing one pool of part buffers.
func s3Uploader(c *cli.Context, s *s3.Store, progress func(int64)) (func(*manifest.Record) error, error) {
	chunk := int64(s3.DefaultChunk)
	if c.IsSet("chunk") {
		chunk = int64(c.Int("chunk"))
	}
	if chunk < s3.MinChunk {
		return nil, usageError("--chunk on an S3 store takes at least %d bytes (S3's smallest part), not %d", s3.MinChunk, chunk)
	}
	jobs := globalInt(c, "jobs")
	opts := s3.UploadOptions{Chunk: chunk, Jobs: jobs, Progress: progress, Buffers: s3.NewBuffers(jobs, chunk)}
	return func(rec *manifest.Record) error {
		err := s.UploadRecord(c.Context, rec, opts)
		if errors.Is(err, context.Canceled) {
			return manifest.Errorf(manifest.UploadInterrupted, "%s: interrupted before its upload finished; the parts sent are kept, run again to resume", rec.Path)
		}
		return err
	}, nil
}

// s3Preparer is prepare's upload into an S3 store.
func s3Preparer(c *cli.Context, uri string) (preparer, error) {
	s, err := openS3(c, uri)
	if err != nil {
		return preparer{}, err
	}
	upload, err := s3Uploader(c, s, nil)
	if err != nil {
		return preparer{}, err
	}
	return preparer{upload: upload, commit: func() error { return nil }}, nil
}

// s3Step runs one step-by-step subcommand and prints its JSON result, as stepStore does.
func s3Step(f func(c *cli.Context, s *s3.Store) (any, error)) func(c *cli.Context, s *s3.Store) error {
	return func(c *cli.Context, s *s3.Store) error {
		if c.NArg() > 0 && c.Command.Name != "chunk" {
			return usageError("upload %s takes no arguments", c.Command.Name)
		}
		out, err := f(c, s)
		return stepOutput(c, out, err)
	}
}

func s3Begin(c *cli.Context, s *s3.Store) (any, error) {
	id, err := s.Begin(c.Context, c.String("name"), c.Int64("size"))
	return map[string]any{"id": id, "offset": 0}, err
}

func s3Chunk(c *cli.Context, s *s3.Store) (any, error) {
	in, done, err := chunkInput(c)
	if err != nil {
		return nil, err
	}
	defer done()
	id := c.String("id")
	if _, err := s.Write(c.Context, id, c.Int64("offset"), in); err != nil {
		return nil, err
	}
	return s.Status(c.Context, id)
}

func s3Finish(c *cli.Context, s *s3.Store) (any, error) {
	info, err := s.Finish(c.Context, c.String("id"), c.Int64("size"), c.String("blake3"))
	if err != nil {
		return nil, err
	}
	return s3Record(s, info), nil
}

// s3Record is the manifest record of a finished upload in an S3 store: its path is its s3:// URI.
func s3Record(s *s3.Store, info *store.Info) *manifest.Record {
	uri := s.FinishedURI(info.ID, info.Name)
	rec := &manifest.Record{Path: uri, Name: info.Name, Blake3: info.Blake3}
	rec.SetSize(info.Size)
	rec.Upload = &manifest.Upload{ID: info.ID, Store: s.URI, Path: uri}
	return rec
}

// s3ID is the upload a record names in store s.
func s3ID(s *s3.Store, rec *manifest.Record) (string, error) {
	if rec.Upload == nil {
		return "", manifest.Errorf(manifest.UploadMissing, "%s: the record names no upload", rec.Path)
	}
	if rec.Upload.Store != s.URI {
		return "", manifest.Errorf(manifest.UploadMissing, "upload %s: in store %s, not %s", rec.Upload.ID, rec.Upload.Store, s.URI)
	}
	return rec.Upload.ID, local.ValidID(rec.Upload.ID)
}

func s3Touch(c *cli.Context, s *s3.Store) error {
	return runStage(c, "touch", func(rec *manifest.Record) error {
		id, err := s3ID(s, rec)
		if err != nil {
			return err
		}
		return s.MarkUsed(c.Context, []string{id}, time.Now())
	})
}

// s3Verify re-reads each upload (a streamed GET) and compares its BLAKE3 with the object's
// metadata, the record and, where the record's file is there, the source: the records of a
// manifest, the ids given, or every finished upload (--all). Its output is the manifest.
func s3Verify(c *cli.Context, s *s3.Store) error {
	if f := c.String("format"); f != "manifest" {
		return usageError("--format %s: an S3 store's uploads are checked into the manifest only (b3sum cannot read s3:// paths)", f)
	}
	ids, err := verifyIDs(c)
	if err != nil {
		return err
	}
	bar := newBar(c, -1, "verify", "bytes")
	l := loop{stage: "verify", bar: bar}
	if c.Bool("all") || len(ids) > 0 {
		var recs []*manifest.Record
		if c.Bool("all") {
			ls, err := s.List(c.Context)
			if err != nil {
				report(c, manifest.AsError(err, manifest.StoreUnreachable))
				return exitError{exitFailed}
			}
			for _, e := range ls.Entries {
				if e.Finished {
					ids = append(ids, e.ID)
				}
			}
		}
		for _, id := range ids {
			uri := s.FinishedURI(id, "")
			recs = append(recs, &manifest.Record{Path: uri, Upload: &manifest.Upload{ID: id, Store: s.URI, Path: uri}})
		}
		l.next = func() (*manifest.Record, bool, error) {
			if len(recs) == 0 {
				return nil, false, nil
			}
			rec := recs[0]
			recs = recs[1:]
			return rec, true, nil
		}
	}
	l.work = func(rec *manifest.Record) error { return s.VerifyRecord(c.Context, rec, bar.Add) }
	return l.toStdout(c)
}

// uploadsAt is the store at dir as resolve reads it. An S3 store always hands out working copies:
// without --workdir they go under the XDG cache (s3.DefaultWorkdir).
func uploadsAt(c *cli.Context, dir string, opts *acp.Options) (acp.Uploads, error) {
	b, err := backendAt(c, dir)
	if err != nil {
		return nil, err
	}
	if s, ok := b.(*s3.Store); ok && opts.Workdir == "" {
		if opts.Workdir, err = s3.DefaultWorkdir(s); err != nil {
			return nil, manifest.Errorf(manifest.UploadUnreadable, "no --workdir and no home folder: %v", err)
		}
	}
	return acp.Backend(c.Context, b), nil
}
