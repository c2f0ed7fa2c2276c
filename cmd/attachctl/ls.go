package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "ls",
		Usage: "list every upload of the store: id, name, size, blake3, made, last used, finished or not",
		Description: "Writes one manifest record per upload, in the order they were begun: a finished one\n" +
			"carries its upload (so the list goes on to verify, touch or prompt), and every record the\n" +
			"fields id, made, lastUsed (null: never used) and finished. For an unfinished upload, size is\n" +
			"the bytes so far, made when it was begun and lastUsed when it was last written (what a\n" +
			"sweep compares). --format text writes a table for people instead. A store that does not\n" +
			"exist yet is empty.\n\n" +
			example("attachctl ls --store S --format text", "attachctl ls --store S | attachctl verify --store S --format text"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "manifest", Usage: "output `FORMAT`: manifest or text"},
		},
		Action: lsCmd,
	})
}

func lsCmd(c *cli.Context) error {
	format := c.String("format")
	if format != "manifest" && format != "text" {
		return usageError("--format %s: the formats are manifest and text", format)
	}
	if c.Args().Present() {
		return usageError("ls takes no arguments; the store is --store DIR")
	}
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	var list []ops.Listed
	s, err := ops.Open(dir, false)
	if err == nil {
		list, err = s.Uploads()
	}
	if err != nil {
		if manifest.CodeOf(err) != manifest.UploadMissing { // a store not made yet is empty
			report(c, manifest.AsError(err, manifest.UploadUnreadable))
			return exitError{exitFailed}
		}
		list, err = nil, nil
	}
	failed := 0
	for _, l := range list {
		if l.Err != nil {
			failed++
			report(c, manifest.AsError(l.Err, manifest.UploadUnreadable))
		}
	}
	if format == "text" {
		err = lsTable(c, list)
	} else {
		out := manifest.NewWriter(c.App.Writer)
		for _, l := range list {
			if err = out.Write(lsRecord(s, l)); err != nil {
				break
			}
		}
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return outputFailed("ls", err)
	}
	if failed > 0 {
		return exitError{exitFailed}
	}
	return nil
}

// lsRecord is the manifest record of one listed upload.
func lsRecord(s *ops.Store, l ops.Listed) *manifest.Record {
	rec := &manifest.Record{Path: l.Path, Name: l.Name, Blake3: l.Blake3}
	if l.Err != nil {
		rec.Fail("ls", l.Err, manifest.UploadUnreadable)
	} else {
		rec.SetSize(l.Size)
	}
	if l.Finished && l.Err == nil {
		rec.Upload = &manifest.Upload{ID: l.ID, Store: s.Dir, Path: l.Path}
	}
	stamp := func(t time.Time) json.RawMessage {
		if t.IsZero() {
			return json.RawMessage("null")
		}
		b, _ := json.Marshal(t.UTC().Format(time.RFC3339))
		return b
	}
	id, _ := json.Marshal(l.ID)
	finished, _ := json.Marshal(l.Finished)
	rec.Extra = []manifest.Field{{Key: "id", Value: id}, {Key: "made", Value: stamp(l.Made)},
		{Key: "lastUsed", Value: stamp(l.LastUsed)}, {Key: "finished", Value: finished}}
	return rec
}

// lsTable is ls --format text: a table for people, sizes in human units, local times, names
// escaped so that each upload is one line.
func lsTable(c *cli.Context, list []ops.Listed) error {
	w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSIZE\tMADE\tLAST USED\tSTATE\tNAME")
	when := func(t time.Time, zero string) string {
		if t.IsZero() {
			return zero
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	var total int64
	for _, l := range list {
		state, used := "finished", when(l.LastUsed, "never")
		switch {
		case l.Err != nil:
			state = "unreadable"
		case !l.Finished:
			state, used = "unfinished", when(l.LastUsed, "-")+" (written)"
		}
		total += l.Size
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, humanBytes(l.Size), when(l.Made, "-"), used, state, manifest.Quote(l.Name))
	}
	fmt.Fprintf(w, "%s, %s\n", counted(len(list), "upload"), humanBytes(total))
	return w.Flush()
}
