package main

import (
	"errors"
	"flag"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/attachctl/attachctl/ops/stage"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/shrink"
	"github.com/urfave/cli/v2"
)

// Flags that more than one command takes are defined here, once.

// shrinkFlags are shrink's own flags, also on prepare.
func shrinkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "out", Usage: "`DIR` for shrunk files (default $XDG_CACHE_HOME/attachctl/shrink, else ~/.cache/attachctl/shrink)"},
		&cli.IntFlag{Name: "max-edge", Value: shrink.DefaultMaxEdge, Usage: "longest edge in `PIXELS`"},
		bytesFlag("max-bytes", shrink.DefaultMaxBytes, "largest encoded size in `BYTES`"),
		&cli.Int64Flag{Name: "max-pixels", Value: shrink.DefaultMaxPixels, Usage: "images with more `PIXELS` (width times height, from the header) are not decoded"},
		bytesFlag("max-memory", shrink.DefaultMaxMemory, "`BYTES` all decodes at once may hold; decodes wait for room, and an image needing more is not decoded"),
	}
}

// shrinkOptions reads shrinkFlags.
func shrinkOptions(c *cli.Context) (shrink.Options, error) {
	opts := shrink.Options{MaxEdge: c.Int("max-edge"), MaxBytes: c.Int64("max-bytes"), MaxPixels: c.Int64("max-pixels"),
		MaxMemory: c.Int64("max-memory")}
	if opts.MaxEdge < 1 || opts.MaxBytes < 1 || opts.MaxPixels < 1 || opts.MaxMemory < 1 {
		return opts, usageError("--max-edge, --max-bytes, --max-pixels and --max-memory take numbers of at least 1")
	}
	out, err := shrinkOut(c)
	opts.OutDir = out
	return opts, err
}

// chunkFlag is upload's --chunk, also on prepare.
func chunkFlag() cli.Flag {
	return bytesFlag("chunk", stage.DefaultChunk, "largest chunk in `BYTES`")
}

// limitsWaitFlag is the --wait of the commands that add uploads (upload, upload begin, upload
// chunk, upload finish, prepare): how long each waits for the store's limits lock, which another upload holds
// while it is checked against the store's limits. The store.locked message names it.
func limitsWaitFlag() cli.Flag {
	return &cli.StringFlag{Name: "wait", Usage: fmt.Sprintf("wait up to `DURATION` (s, m, h, d, w) for the store's limits lock, held while another upload is checked against the store's limits (default: %s)", store.DefaultLimitsWait)}
}

// withLimitsWait is the command's globals with its --wait (limitsWaitFlag): the stores it opens
// wait so long for their limits lock. It is kept with the command's globals, not in a package
// variable, so that runs in one process do not share it.
func withLimitsWait(c *cli.Context) (globals, error) {
	g := globalOptions(c)
	d, err := durationFlag(c, "wait", store.DefaultLimitsWait)
	g.wait = d
	return g, err
}

// chunkSize reads chunkFlag.
func chunkSize(c *cli.Context) (int, error) {
	n := c.Int("chunk")
	if n < 1 {
		return 0, usageError("--chunk %d: takes at least 1 byte", n)
	}
	return n, nil
}

// bytesFlag is a flag that takes a byte count with or without a suffix (parseBytes). Read it as an
// Int64Flag (c.Int64, or c.Int): the flag set holds the count in plain digits.
func bytesFlag(name string, def int64, usage string) cli.Flag {
	return &bytesCountFlag{Int64Flag: cli.Int64Flag{Name: name, Value: def, Usage: usage, DefaultText: formatBytes(def)}}
}

// sizeFlag is bytesFlag that also takes -1, which says "no size given".
func sizeFlag(name string, usage string) cli.Flag {
	return &bytesCountFlag{Int64Flag: cli.Int64Flag{Name: name, Value: -1, Usage: usage}, open: true}
}

type bytesCountFlag struct {
	cli.Int64Flag
	open bool // -1 is taken
}

// Apply gives each flag set its own value, so an app made twice in one process starts afresh.
func (f *bytesCountFlag) Apply(set *flag.FlagSet) error {
	for _, name := range f.Names() {
		set.Var(&bytesValue{n: f.Value, open: f.open}, name, f.Usage)
	}
	return nil
}

func (f *bytesCountFlag) String() string { return cli.FlagStringer(f) }

type bytesValue struct {
	n    int64
	open bool
}

func (v *bytesValue) String() string { return strconv.FormatInt(v.n, 10) }

func (v *bytesValue) Set(s string) error {
	if v.open && s == "-1" {
		v.n = -1
		return nil
	}
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	v.n = n
	return nil
}

// byteSuffix is a number and its unit in a byte count. Compiled on first use, as the
// other regexps of this package: most runs parse none, and each start would pay for them.
var byteSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+)(?:\.([0-9]+))?([kKmMgGtTpPeE]i?)?[bB]?$`) })

// parseBytes reads a byte count: plain digits, or a number with an SI suffix (k, M, G, T, P, E:
// powers of 1000, as in 500k, 500kB, 1.5MB) or an IEC one (Ki, Mi, Gi ...: powers of 1024, as in
// 4MiB), the B optional and the letters in either case. A fraction is taken when the count comes
// out whole (1.5KiB is 1536, 1.5B is refused).
func parseBytes(s string) (int64, error) {
	m := byteSuffix().FindStringSubmatch(s)
	if m == nil {
		return 0, errors.New("takes a count of bytes such as 500000, 500k, 500KB or 4MiB")
	}
	unit := big.NewInt(1)
	if p := m[3]; p != "" {
		base := int64(1000)
		if strings.HasSuffix(p, "i") {
			base = 1024
		}
		exp := strings.IndexByte("kmgtpe", byte(unicode.ToLower(rune(p[0])))) + 1
		unit.Exp(big.NewInt(base), big.NewInt(int64(exp)), nil)
	}
	n, ok := new(big.Rat).SetString(m[1] + "." + m[2] + "0")
	if !ok {
		return 0, errors.New("takes a count of bytes such as 500000, 500k, 500KB or 4MiB")
	}
	n.Mul(n, new(big.Rat).SetInt(unit))
	if !n.IsInt() {
		return 0, errors.New("is not a whole number of bytes")
	}
	if !n.Num().IsInt64() {
		return 0, errors.New("is too large")
	}
	return n.Num().Int64(), nil
}

// formatBytes is n as parseBytes reads it: in the largest IEC unit that divides it (512KiB), else
// the largest SI one (500kB), else in digits.
func formatBytes(n int64) string {
	if n > 0 {
		for _, u := range []struct {
			base  int64
			names string
		}{{1024, "KiB MiB GiB TiB PiB EiB"}, {1000, "kB MB GB TB PB EB"}} {
			names := strings.Fields(u.names)
			for i := len(names) - 1; i >= 0; i-- {
				size := int64(1)
				for range i + 1 {
					size *= u.base
				}
				if n%size == 0 {
					return strconv.FormatInt(n/size, 10) + names[i]
				}
			}
		}
	}
	return strconv.FormatInt(n, 10)
}

// durationPart is one number and its unit in a duration such as 1d12h.
var durationPart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(ms|[smhdw])`) })

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
		m := durationPart().FindStringSubmatch(s)
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
