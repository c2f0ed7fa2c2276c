package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "ls",
		Usage: "list every upload of the store: id, name, size, blake3, made, last used, finished or not",
		Description: "Writes one manifest record per upload, in the order they were begun: a finished one\n" +
			"carries its upload (so the list goes on to verify, touch or prompt), and every record the\n" +
			"fields id, made, lastUsed (null: never used) and finished. For an unfinished upload, path\n" +
			"is where it will be once finished, size the bytes so far, made when it was begun and\n" +
			"lastUsed when it was last written (what a sweep compares). What the store does not\n" +
			"recognise is named on standard error and left alone. --format text writes a table for\n" +
			"people instead. A store that does not exist yet is empty.\n\n" +
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
	return ls(globalOptions(c), format)
}

// ls lists the store's uploads in format (manifest or text).
func ls(g globals, format string) error {
	dir, err := g.storeDir()
	if err != nil {
		return err
	}
	b, err := g.openStore(dir)
	if err == nil {
		if err := g.needStore(b); err != nil {
			return err
		}
	}
	var list *store.Listing
	if err == nil {
		list, err = stage.Uploads(g.ctx, b)
	}
	if err != nil {
		g.report(fault.AsError(err, fault.UploadUnreadable))
		return exitError{exitFailed}
	}
	// What the store does not recognise (a folder named like an id with no readable metadata, a
	// stray file) is not an upload: named on standard error, left alone, as sweep leaves it.
	for _, sk := range list.Skipped {
		g.summary("ls: skipped %s: %s", manifest.Quote(sk.Path), sk.Why)
	}
	if format == "text" {
		err = lsTable(g, b, list.Entries)
	} else {
		out := manifest.NewWriter(g.stdout)
		for _, e := range list.Entries {
			if err = out.Write(stage.EntryRecord(b, e)); err != nil {
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
	return nil
}

// lsTable is ls --format text: a table for people, sizes in human units, local times, names
// quoted when they need it, so that each upload is one line.
func lsTable(g globals, b store.Backend, list []store.Entry) error {
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSIZE\tMADE\tLAST USED\tSTATE\tNAME")
	when := func(t time.Time, zero string) string {
		if t.IsZero() {
			return zero
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	var total int64
	for _, e := range list {
		state, used := "finished", when(e.LastUsed, "never")
		if !e.Finished {
			state, used = "unfinished", when(e.LastUsed, "-")+" (written)"
			if e.Busy {
				state = "uploading"
			}
		}
		total += e.Size
		name := manifest.Quote(e.Name)
		if e.Folder {
			name += "/ (" + counted(e.Files, "file") + ")" // a folder upload: the count of its files
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, store.Human(e.Size), when(e.Made, "-"), used, state, name)
	}
	fmt.Fprintf(w, "%s, %s\n", counted(len(list), "upload"), store.Human(total))
	return w.Flush()
}
