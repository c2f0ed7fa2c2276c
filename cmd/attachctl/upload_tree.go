package main

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/sniff"
	"github.com/urfave/cli/v2"
)

// isFolder reports whether rec is a folder attachment (sniff's kind folder).
func isFolder(rec *manifest.Record) bool { return rec.Kind == manifest.KindFolder }

// putFolder uploads the folder record rec as one upload into a store that keeps folders,
// walking the folder again as the command's walk flags say (what it skips was told by the walk
// that found it), and sets rec's upload, size, files and BLAKE3.
func putFolder(c *cli.Context, b any, location string, finished func(id, name string) string, rec *manifest.Record, progress func(int64)) error {
	t, ok := b.(store.Trees)
	if !ok {
		return manifest.Errorf(manifest.UploadInvalid, "%s: a folder; store %s does not keep folder uploads (use --each for one upload per file)", rec.Path, location)
	}
	walk, err := folderWalk(c)
	if err != nil {
		return err
	}
	walk.Skipped = nil
	abs, err := filepath.Abs(rec.Path)
	if err != nil {
		return manifest.Errorf(manifest.FileUnreadable, "%s: %v", rec.Path, err)
	}
	files, err := sniff.Tree(abs, walk)
	if err != nil {
		return err
	}
	name := rec.Name
	if name == "" {
		name = filepath.Base(abs)
	}
	src := store.TreeSource{Path: abs, Name: name, Blake3: rec.Blake3, Files: make([]store.TreeFile, len(files))}
	for i, f := range files {
		src.Files[i] = store.TreeFile{Rel: f.Rel, Path: f.Path, Size: f.Size}
	}
	ti, err := t.UploadTree(c.Context, src, store.TreeOptions{Progress: progress})
	if errors.Is(err, context.Canceled) {
		return manifest.Errorf(manifest.UploadMissing, "%s: interrupted before its upload finished; the partial is kept, run again to resume", rec.Path)
	}
	if err != nil {
		return err
	}
	rec.Name, rec.Blake3, rec.Kind, rec.Mime = ti.Name, ti.Blake3, manifest.KindFolder, manifest.MimeFolder
	rec.SetSize(ti.Size)
	rec.Files = len(ti.Files)
	rec.Upload = &manifest.Upload{ID: ti.ID, Store: location, Path: finished(ti.ID, ti.Name)}
	return nil
}
