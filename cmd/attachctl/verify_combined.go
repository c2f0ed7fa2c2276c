package main

import (
	"context"
	"errors"
	"path"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// combinedLines are verify --format combined's lines for one record, as rclone check --combined
// writes them: "= PATH" intact, "* PATH" changed, "- PATH" missing, "+ PATH" added, "! PATH"
// unreadable; a folder upload file by file. A folder's files are read from its listing, and what
// happened to each from the tree verify's failure (store.TreeMismatch), not from its words.
func combinedLines(ctx context.Context, b store.Backend, rec *manifest.Record) []string {
	if rec.Kind == manifest.KindFolder && rec.Upload != nil {
		if t := b.Features().Trees; t != nil {
			if ti, err := t.TreeInfo(ctx, rec.Upload.ID); err == nil {
				return folderLines(rec, ti)
			}
		}
	}
	return []string{combinedMark(rec) + " " + escapeLine(rec.Path)}
}

// combinedMark is the mark of a record as a whole.
func combinedMark(rec *manifest.Record) string {
	if !rec.Failed() {
		return "="
	}
	switch rec.Error.Code {
	case fault.VerifyMismatch:
		return "*"
	case fault.UploadMissing, fault.FileMissing:
		return "-"
	}
	return "!"
}

// folderLines are the lines of a folder upload's files: each of its listing, marked by what the
// tree verify found of it (store.TreeMismatch), then each it found added.
func folderLines(rec *manifest.Record, ti *store.TreeInfo) []string {
	found := map[string]store.TreeWhat{}
	var added []string
	var m *store.TreeMismatch
	if rec.Failed() && errors.As(rec.Error, &m) {
		for _, f := range m.Faults {
			switch f.What {
			case store.TreeAdded:
				added = append(added, f.Rel)
			case store.TreeMissing, store.TreeChanged, store.TreeUnreadable:
				found[f.Rel] = f.What
			}
		}
	}
	whole := combinedMark(rec)
	var lines []string
	for _, f := range ti.Files {
		mark := "="
		switch what, ok := found[f.Rel]; {
		case !rec.Failed():
		case ok && what == store.TreeMissing:
			mark = "-"
		case ok && what == store.TreeChanged:
			mark = "*"
		case ok:
			mark = "!"
		case whole != "*": // the folder as a whole could not be read
			mark = whole
		}
		lines = append(lines, mark+" "+escapeLine(path.Join(rec.Path, f.Rel)))
	}
	for _, rel := range added {
		lines = append(lines, "+ "+escapeLine(path.Join(rec.Path, rel)))
	}
	return lines
}
