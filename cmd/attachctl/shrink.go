package main

import (
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/shrink"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "shrink",
		Usage:     "shrink images to what models accept: long edge, encoded size; others pass through",
		ArgsUsage: "[PATH...]",
		Description: "Images within --max-edge and --max-bytes pass through untouched (kept). Others are\n" +
			"decoded, turned upright by their EXIF orientation, downscaled by area averaging and\n" +
			"re-encoded without EXIF into --out: PNG when flat or transparent, JPEG when photo-like.\n" +
			"BMP and TIFF are converted even within the limits. Images over --max-pixels, animated,\n" +
			"undecodable or of a format with no decoder pass through as they are (asis, with a reason).\n" +
			"Shrunk files are named by the source's BLAKE3 and the limits, so a second run reuses them.\n\n" +
			example("attachctl sniff shots/*.png | attachctl shrink --max-edge 1568 > manifest.jsonl"),
		Flags: append([]cli.Flag{manifestFlag, noHashFlag}, shrinkFlags()...),
		Action: func(c *cli.Context) error {
			opts, err := shrinkOptions(c)
			if err != nil {
				return err
			}
			limitHeap(opts)
			return runStage(globalOptions(c), stageOptions(c), "shrink", func(rec *manifest.Record) error { return shrink.Record(rec, opts) })
		},
	})
}

// shrinkOut is --out, else $XDG_CACHE_HOME/attachctl/shrink, else ~/.cache/attachctl/shrink, absolute.
func shrinkOut(c *cli.Context) (string, error) {
	dir := c.String("out")
	if dir == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", usageError("no --out given and no home folder: %v", err)
			}
			base = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(base, "attachctl", "shrink")
	}
	return filepath.Abs(dir)
}

// limitHeap keeps the Go heap within three quarters of --max-memory. The budget counts what
// decodes hold; without a limit the collector lets garbage grow the heap to twice the live size.
// The rest of the budget is for what the heap does not hold (the HEIC and AVIF decoders' mapped
// memory, the runtime's own).
func limitHeap(opts shrink.Options) { debug.SetMemoryLimit(opts.MaxMemory / 4 * 3) }
