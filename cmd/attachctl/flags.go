package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/shrink"
	"github.com/urfave/cli/v2"
)

// Flags that more than one command takes are defined here, once.

// shrinkFlags are shrink's own flags, also on prepare.
func shrinkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "out", Usage: "folder for shrunk files (default $XDG_CACHE_HOME/attachctl/shrink, else ~/.cache/attachctl/shrink)"},
		&cli.IntFlag{Name: "max-edge", Value: shrink.DefaultMaxEdge, Usage: "longest edge in pixels"},
		&cli.Int64Flag{Name: "max-bytes", Value: shrink.DefaultMaxBytes, Usage: "largest encoded size in bytes"},
		&cli.Int64Flag{Name: "max-pixels", Value: shrink.DefaultMaxPixels, Usage: "images with more pixels (from the header) are not decoded"},
		&cli.Int64Flag{Name: "max-memory", Value: shrink.DefaultMaxMemory, Usage: "bytes all decodes at once may hold; decodes wait for room, and an image needing more is not decoded"},
	}
}

// shrinkOptions reads shrinkFlags.
func shrinkOptions(c *cli.Context) (shrink.Options, error) {
	opts := shrink.Options{MaxEdge: c.Int("max-edge"), MaxBytes: c.Int64("max-bytes"), MaxPixels: c.Int64("max-pixels"),
		MaxMemory: c.Int64("max-memory")}
	if opts.MaxEdge < 1 || opts.MaxBytes < 1 || opts.MaxPixels < 1 || opts.MaxMemory < 1 {
		return opts, usageError("--max-edge, --max-bytes, --max-pixels and --max-memory take whole numbers of at least 1")
	}
	out, err := shrinkOut(c)
	opts.OutDir = out
	return opts, err
}

// chunkFlag is upload's --chunk, also on prepare.
func chunkFlag() cli.Flag {
	return &cli.IntFlag{Name: "chunk", Value: stage.DefaultChunk, Usage: "largest chunk in `BYTES`"}
}

// chunkSize reads chunkFlag.
func chunkSize(c *cli.Context) (int, error) {
	n := c.Int("chunk")
	if n < 1 {
		return 0, usageError("--chunk %d: takes a whole number of bytes of at least 1", n)
	}
	return n, nil
}

// durationPart is one number and its unit in a duration such as 1d12h.
var durationPart = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(ms|[smhdw])`)

var unitLength = map[string]time.Duration{
	"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour,
}

// durationFlag reads a duration flag (parseDuration). Unset, it is def.
func durationFlag(c *cli.Context, name string, def time.Duration) (time.Duration, error) {
	if !c.IsSet(name) {
		return def, nil
	}
	d, err := parseDuration(c.String(name))
	if err != nil {
		return 0, usageError("--%s %s: %v", name, c.String(name), err)
	}
	return d, nil
}

// parseDuration reads numbers with units s, m, h, d and w (7d, 36h, 1w2d, 1.5h; ms too, for
// short waits). A day is 24 hours, whatever the clocks do.
func parseDuration(given string) (time.Duration, error) {
	if given == "" {
		return 0, errors.New("needs a duration such as 7d")
	}
	s, total := given, time.Duration(0)
	for s != "" {
		m := durationPart.FindStringSubmatch(s)
		if m == nil {
			return 0, errors.New("units are s, m, h, d, w (as in 7d, 36h or 1w2d)")
		}
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil || float64(total)+n*float64(unitLength[m[2]]) > float64(1<<62) {
			return 0, errors.New("too long")
		}
		total += time.Duration(n * float64(unitLength[m[2]]))
		s = s[len(m[0]):]
	}
	return total, nil
}

// timeFlag reads a time flag: RFC 3339 (2026-11-30T08:00:00Z), or a date (2026-11-30), which is
// that day's midnight in local time, as date(1) and find -newermt take it.
func timeFlag(c *cli.Context, name string) (time.Time, error) {
	t, err := parseTime(c.String(name))
	if err != nil {
		return t, usageError("--%s %s: %v", name, c.String(name), err)
	}
	return t, nil
}

func parseTime(given string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, given); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, given, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("takes an RFC 3339 time (2026-11-30T08:00:00Z) or a date (2026-11-30, midnight local time)")
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// counted is "1 upload", "2 uploads".
func counted(n int, noun string) string { return fmt.Sprintf("%d %s%s", n, noun, plural(n)) }
