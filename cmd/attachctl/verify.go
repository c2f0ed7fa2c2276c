package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/stage"
	storepkg "github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/location"
)

func init() {
	register(&cli.Command{
		Name:  "verify",
		Usage: "re-read uploads and compare their BLAKE3; sets \"verified\"",
		Description: "Reads a manifest and re-hashes each record's file and its finished upload (through the\n" +
			"guarded open). Given upload ids, or --all, it checks those uploads (every finished upload\n" +
			"of the store) against the hash recorded when each was finished and the store's rules\n" +
			"(modes, links, no symlinks). --format text writes one line a failure, saying which side\n" +
			"changed and what to do, and a last line \"N ok, M failed\"; --format b3sum writes\n" +
			"\"HASH  PATH\" lines (finished paths) that b3sum --check accepts; --check FILE reads such\n" +
			"lines and answers as b3sum --check does. --format combined writes one line a file (a folder\n" +
			"upload file by file): = intact, * changed, - missing, + added, ! unreadable. A summary goes to standard error unless --quiet.\n\n" +
			example("attachctl verify --store S 01935c4e-8a31-7b6c-9e2f-0c1d2e3f4a5b",
				"attachctl verify --store S --all --format text",
				"attachctl verify --store S --all --format b3sum > sums.b3 && b3sum --check sums.b3",
				"attachctl verify --store S --all --sample 10% --seed 7 --format text   # a nightly check of a large store"),
		ArgsUsage: "[ID...]",
		Flags: []cli.Flag{
			manifestFlag,
			&cli.BoolFlag{Name: "all", Usage: "verify every finished upload of the store"},
			&cli.StringFlag{Name: "format", Value: "manifest", Usage: "output `FORMAT`: manifest, text, b3sum or combined (one line a file: = intact, * changed, - missing, + added, ! unreadable)"},
			&cli.StringFlag{Name: "check", Usage: "read b3sum lines from `FILE` (- for standard input) and check each file"},
			&cli.StringFlag{Name: "sample", Usage: "with --all, check a random `SHARE` of the store: a percentage (10%), a fraction (1/10) or a byte size (2GiB)"},
			&cli.Uint64Flag{Name: "seed", Usage: "with --sample, choose by the seed `N`: the same seed checks the same uploads (default: a new one each run, printed)"},
		},
		Action: verifyCmd,
	})
}

func verifyCmd(c *cli.Context) error {
	format := c.String("format")
	if format != "manifest" && format != "b3sum" && format != "text" && format != "combined" {
		return usageError("--format %s: the formats are manifest, text, b3sum and combined", format)
	}
	if c.IsSet("check") {
		if c.Bool("all") || c.Args().Present() || c.IsSet("format") {
			return usageError("--check FILE goes alone, without --all, --format or ids")
		}
		return b3sumCheck(globalOptions(c), c.String("check"))
	}
	ids, err := verifyIDs(c)
	if err != nil {
		return err
	}
	if c.Bool("all") && len(ids) > 0 {
		return usageError("--all checks every upload; give ids or --all, not both")
	}
	sample, err := sampleFlags(c)
	if err != nil {
		return err
	}
	return verify(globalOptions(c), stageOptions(c), format, c.Bool("all"), ids, sample)
}

// verify checks the records of the manifest, or the uploads ids (every finished upload with all,
// or sample's share of them), and writes them in format.
func verify(g globals, f stageFlags, format string, all bool, ids []string, sample *stage.Sample) error {
	store, err := g.storeWhenNeeded()
	if err != nil {
		return err
	}
	if format == "b3sum" {
		if b, err := store(); err == nil && !isLocal(b) {
			return usageError("--format b3sum: the uploads of %s are checked into the manifest only (b3sum cannot read %s paths)", b.Location(), schemeOf(b))
		}
	}
	bar := g.newBar(-1, "verify", "bytes")
	progress := func(n int64) { bar.Add(n) }
	l := loop{stage: "verify", flags: f, bar: bar}
	if all || len(ids) > 0 {
		b, err := store()
		if err != nil {
			g.report(fault.AsError(err, fault.UploadMissing))
			return exitError{exitFailed}
		}
		if err := g.needStore(b); err != nil {
			return err
		}
		if all {
			es, skipped, err := stage.VerifyEntries(g.ctx, b)
			if err != nil {
				g.report(fault.AsError(err, fault.UploadUnreadable))
				return exitError{exitFailed}
			}
			if sample != nil {
				es = sampled(g, *sample, es)
			}
			for _, e := range es {
				ids = append(ids, e.ID)
			}
			for _, sk := range skipped {
				g.summary("verify: skipped %s: %s", manifest.Quote(sk.Path), sk.Why)
			}
		}
		if isLocal(b) { // the bar's total, where it costs no request an upload
			var total int64
			for _, id := range ids {
				if info, err := b.Info(g.ctx, id); err == nil {
					total += info.Size
				}
			}
			bar.AddTotal(total + 1)
		}
		l.next = func() (*manifest.Record, bool, error) {
			if len(ids) == 0 {
				return nil, false, nil
			}
			id := ids[0]
			ids = ids[1:]
			return &manifest.Record{Path: id}, true, nil
		}
		l.work = func(rec *manifest.Record) error {
			got, err := stage.VerifyID(g.ctx, b, rec.Path, progress)
			*rec = *got
			return err
		}
	} else {
		l.first = g.needStoreWhenNeeded(store)
		l.work = func(rec *manifest.Record) error {
			b, err := store()
			if err != nil {
				return err
			}
			return stage.VerifyRecord(g.ctx, b, rec, progress)
		}
	}
	var emit func(rec *manifest.Record) error
	out := bufio.NewWriter(g.stdout)
	flush := out.Flush
	switch format {
	case "manifest":
		w := manifest.NewWriter(g.stdout)
		emit, flush = w.Write, w.Flush
	case "b3sum":
		// b3sum lines, only for uploads that verified: their recorded hash and finished path.
		emit = func(rec *manifest.Record) error {
			if rec.Failed() || rec.Upload == nil || rec.Verified == nil || !rec.Verified.OK {
				return nil
			}
			_, err := io.WriteString(out, ops.B3sumLine(rec.Verified.Blake3, rec.Upload.Path))
			return err
		}
	case "combined":
		l.reported = true
		emit = func(rec *manifest.Record) error {
			b, _ := store()
			for _, line := range combinedLines(g.ctx, b, rec) {
				if _, err := fmt.Fprintln(out, line); err != nil {
					return err
				}
			}
			return nil
		}
	case "text":
		l.reported = true
		emit = func(rec *manifest.Record) error {
			if !rec.Failed() {
				return nil
			}
			b, _ := store()
			_, err := fmt.Fprintln(out, escapeLine(failureInWords(g.ctx, b, rec)))
			return err
		}
	}
	n := 0
	l.emit = func(rec *manifest.Record) error {
		n++
		return emit(rec)
	}
	failed, err := l.run(g)
	if err == nil && format == "text" {
		_, err = fmt.Fprintf(out, "%d ok, %d failed\n", n-failed, failed)
	}
	if ferr := flush(); err == nil && ferr != nil {
		err = outputFailed("verify", ferr)
	}
	if err != nil {
		return err
	}
	if format != "text" {
		if failed > 0 {
			g.summary("verify: %d ok, %d failed", n-failed, failed)
		} else {
			g.summary("verify: %d ok", n)
		}
	}
	if failed > 0 {
		return exitError{exitFailed}
	}
	return nil
}

// sampleFlags reads --sample and --seed: nil without --sample.
func sampleFlags(c *cli.Context) (*stage.Sample, error) {
	if !c.IsSet("sample") {
		if c.IsSet("seed") {
			return nil, usageError("--seed goes with --sample")
		}
		return nil, nil
	}
	if !c.Bool("all") {
		return nil, usageError("--sample checks a share of the whole store; it goes with --all")
	}
	v := strings.TrimSpace(c.String("sample"))
	s := stage.Sample{Seed: c.Uint64("seed")}
	if !c.IsSet("seed") {
		s.Seed = rand.Uint64()
	}
	bad := usageError("--sample %s: takes a percentage (10%%), a fraction (1/10) or a byte size (2GiB)", v)
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || !(f > 0 && f <= 100) {
			return nil, bad
		}
		s.Fraction = f / 100
	} else if num, den, ok := strings.Cut(v, "/"); ok {
		n, err1 := strconv.ParseUint(num, 10, 32)
		d, err2 := strconv.ParseUint(den, 10, 32)
		if err1 != nil || err2 != nil || n == 0 || d == 0 || n > d {
			return nil, bad
		}
		s.Fraction = float64(n) / float64(d)
	} else {
		n, err := parseBytes(v)
		if err != nil || n <= 0 {
			return nil, bad
		}
		s.Bytes = n
	}
	return &s, nil
}

// sampled is the sample's share of es, said on standard error with what it covers of the store
// (uploads and bytes) and the seed that chooses the same again.
func sampled(g globals, s stage.Sample, es []stage.Checked) []stage.Checked {
	picked := s.Pick(es)
	var all, got int64
	for _, e := range es {
		all += e.Size
	}
	for _, e := range picked {
		got += e.Size
	}
	share := func(a, b int64) string {
		if b == 0 {
			return "100%"
		}
		return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 1, 64) + "%"
	}
	g.summary("verify: sample: %d of %s (%s), %s of %s (%s); --seed %d checks the same uploads again",
		len(picked), counted(len(es), "upload"), share(int64(len(picked)), int64(len(es))),
		storepkg.Human(got), storepkg.Human(all), share(got, all), s.Seed)
	return picked
}

// verifyIDs are the upload ids verify was given, checked, and refused beside --manifest.
func verifyIDs(c *cli.Context) ([]string, error) {
	ids := c.Args().Slice()
	for _, id := range ids {
		if storepkg.ValidID(id) != nil {
			return nil, usageError("%q is not an upload id; 'attachctl ls' lists them, and a manifest goes on standard input or --manifest", id)
		}
	}
	if (c.Bool("all") || len(ids) > 0) && c.IsSet("manifest") {
		return nil, usageError("--all and ids read the store; they take no --manifest")
	}
	return ids, nil
}

// b3sumCheck is b3sum --check: for each line, "NAME: OK" or "NAME: FAILED" on standard output
// (NAME as b3sum prints it), the reason for a file that cannot be read on standard error; exit 1
// on any failure or bad line. Interrupted, it opens no further file, answers each line not
// reached FAILED (upload.interrupted) and says so once on standard error.
func b3sumCheck(g globals, name string) error {
	var in io.Reader = g.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return usageError("--check: %v", err)
		}
		defer f.Close()
		in = f
	}
	bar := g.newBar(-1, "verify", "bytes")
	out := bufio.NewWriter(g.stdout)
	sum, err := stage.CheckB3sum(g.ctx, in, stage.CheckOptions{Jobs: g.jobs, Open: openForCheck, Progress: withTestPause(g.ctx, bar.Add)},
		func(c stage.CheckedLine) error {
			if c.Name == "" {
				fmt.Fprintf(g.stderr, "attachctl: verify: %s\n", escapeLine(fmt.Sprintf("%s line %d: %v", name, c.Line, c.Err)))
				return nil
			}
			_, err := fmt.Fprintln(out, c.Output())
			return err
		})
	bar.Finish()
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return outputFailed("verify", err)
	}
	if e := sum.NotReachedFailure(); e != nil {
		// As a stage's loop: the lines not reached are told once, and the run fails (a signal
		// makes its exit 128+N).
		e.Stage = "verify"
		g.report(e)
		return exitError{exitFailed}
	}
	if sum.Failed > 0 {
		g.summary("verify: %d of %d lines failed", sum.Failed, sum.Lines)
		return exitError{exitFailed}
	}
	g.summary("verify: %d ok", sum.Lines)
	return nil
}

// isLocal reports whether b's uploads are files on this machine.
func isLocal(b storepkg.Backend) bool {
	_, ok := b.(storepkg.Pather)
	return ok
}

// schemeOf is the scheme of b's location ("s3"), for messages.
func schemeOf(b storepkg.Backend) string {
	return location.Scheme(b.Location()) + "://"
}
