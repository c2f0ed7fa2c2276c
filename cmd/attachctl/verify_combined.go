package main

import (
	"context"
	"path"
	"strconv"
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// combinedLines are verify --format combined's lines for one record, as rclone check --combined
// writes them: "= PATH" intact, "* PATH" changed, "- PATH" missing, "+ PATH" added, "! PATH"
// unreadable; a folder upload file by file. A folder's files are read from its listing, and what
// the failure names of each (the backends name every file that changed, went missing, could not
// be read or was added, each as manifest.Quote(rel) and its words).
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

// folderLines are the lines of a folder upload's files: each of its listing, then each the
// failure names as added.
func folderLines(rec *manifest.Record, ti *store.TreeInfo) []string {
	msg := ""
	if rec.Failed() {
		msg = rec.Error.Message
	}
	whole := combinedMark(rec)
	var lines []string
	for _, f := range ti.Files {
		q := manifest.Quote(f.Rel)
		mark := "="
		switch {
		case !rec.Failed():
		case strings.Contains(msg, q+" is missing"):
			mark = "-"
		case strings.Contains(msg, q+" changed ("):
			mark = "*"
		case strings.Contains(msg, q+": "):
			mark = "!"
		case whole != "*": // the folder as a whole could not be read
			mark = whole
		}
		lines = append(lines, mark+" "+escapeLine(path.Join(rec.Path, f.Rel)))
	}
	if _, list, ok := strings.Cut(msg, ": folder "); ok && rec.Error.Code == fault.VerifyMismatch {
		_, list, _ = strings.Cut(list, ": ")
		for _, item := range strings.Split(list, "; ") {
			if rel, ok := strings.CutSuffix(item, " was added"); ok {
				if u, err := strconv.Unquote(rel); err == nil && strings.HasPrefix(rel, `"`) {
					rel = u
				}
				lines = append(lines, "+ "+escapeLine(path.Join(rec.Path, rel)))
			}
		}
	}
	return lines
}
