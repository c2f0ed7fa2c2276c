package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNormalizeArgs(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	for _, tc := range []struct {
		in, want string // space-separated; want "" when it is a usage error
		err      string // part of the usage error's line
	}{
		{in: "sniff a.png --no-hash", want: "sniff --no-hash -- a.png"},
		{in: "upload a.png --store S b.png", want: "upload --store S -- a.png b.png"},
		{in: "upload a.png --store=S", want: "upload --store=S -- a.png"},
		{in: "--quiet upload a.png -q", want: "--quiet upload -q -- a.png"},
		{in: "sniff -- --no-hash", want: "sniff -- --no-hash"},
		{in: "sniff a -- -b --c", want: "sniff -- a -b --c"},
		{in: "sniff -", want: "sniff -- -"},
		{in: "upload begin --name n --size 3", want: "upload begin --name n --size 3"},
		{in: "upload --store S chunk - --id X --offset 0", want: "upload --store S chunk --id X --offset 0 -- -"},
		{in: "upload chunk --id X --offset -1", want: "upload chunk --id X --offset -1"},
		{in: "help upload begin", want: "upload begin --help"},
		{in: "help", want: "--help"},
		{in: "upload help chunk", want: "upload chunk --help"},
		{in: "sweep --older-than 7d", want: "sweep --older-than 7d"},
		{in: "sniff --nohash x", err: "unknown flag --nohash; did you mean --no-hash?"},
		{in: "sniff x -z", err: "unknown flag -z; a path that begins with - goes after --"},
		{in: "sniff ---no-hash x", err: "unknown flag ---no-hash; did you mean --no-hash?"},
		{in: "uplod a", err: `unknown command "uplod"; did you mean upload?`},
		{in: "help nosuch", err: `unknown command "nosuch"`},
		{in: "verfy --all", err: `unknown command "verfy"; did you mean verify?`},
		{in: "--nosuch sniff", err: "unknown flag --nosuch"},
		{in: "nosuch", err: `unknown command "nosuch"`},
		{in: "upload a.png --store", err: "--store needs a value"},
		{in: "upload begin", err: "upload begin needs --name NAME"},
		{in: "upload chunk --id X", err: "upload chunk needs --offset"},
		{in: "upload begin --help", want: "upload begin --help"},
		{in: "upload --store S -- begin", want: "upload --store S -- ./begin"},
		{in: "upload -- help x", want: "upload -- help x"},
		{in: "sniff -- begin", want: "sniff -- begin"},
		{in: "upload h", want: "upload -- h"},
		{in: "h sweep", want: "sweep --help"},
	} {
		in := append([]string{"attachctl"}, strings.Fields(tc.in)...)
		given := slices.Clone(in)
		got, err := normalizeArgs(app, in)
		if !slices.Equal(in, given) {
			t.Errorf("%q: the caller's arguments changed to %q", tc.in, in)
		}
		if tc.err != "" {
			var u *usage
			if !errors.As(err, &u) || !strings.Contains(u.msg, tc.err) {
				t.Errorf("%q: got %q, %v; want the usage error %q", tc.in, got, err, tc.err)
			} else if !strings.Contains(tc.err, "did you mean") && strings.Contains(u.msg, "did you mean") {
				t.Errorf("%q: %q suggests what is not close", tc.in, u.msg)
			}
			continue
		}
		if want := append([]string{"attachctl"}, strings.Fields(tc.want)...); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true},
		{"1w2d", 9 * 24 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"1.5h", 90 * time.Minute, true},
		{"90s", 90 * time.Second, true},
		{"50ms", 50 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"0s", 0, true},
		{"7x", 0, false},
		{"7", 0, false},
		{"d", 0, false},
		{"-1h", 0, false},
		{"", 0, false},
		{"99999999999w", 0, false},
	} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: got %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if _, err := parseDuration("7x"); err == nil || err.Error() != "units are s, m, h, d, w (as in 7d, 36h or 1w2d)" {
		t.Errorf("7x: %v", err)
	}
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-11-30", time.Date(2026, 11, 30, 0, 0, 0, 0, time.Local), true},
		{"2026-11-30T08:00:00Z", time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), true},
		{"2026-11-30T08:00:00.5+02:00", time.Date(2026, 11, 30, 6, 0, 0, 5e8, time.UTC), true},
		{"2026-11-31", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"30/11/2026", time.Time{}, false},
	} {
		got, err := parseTime(tc.in)
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%q: got %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestEscapeLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain name.png":      "plain name.png",
		`back\slash "quoted"`: `back\slash "quoted"`,
		"two\nlines":          `two\nlines`,
		"tab\tand\\back\r":    `tab\tand\\back\r`,
		"esc\x1b[31m \"q\"":   `esc\x1b[31m "q"`,
		"bad\xffutf8":         `bad\xffutf8`,
		"ünïcødé ok":          "ünïcødé ok",
		"c1 control \u0085!":  `c1 control \u0085!`,
	} {
		if got := escapeLine(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// FuzzNormalizeArgs: any command line is either refused with a usage error or rewritten; the
// caller's arguments are never changed, and a rewritten line is rewritten to itself again.
func FuzzNormalizeArgs(f *testing.F) {
	for _, seed := range []string{
		"sniff a.png --no-hash", "upload a.png --store S b.png", "upload --store S chunk - --id X --offset 0",
		"help upload begin", "sniff -- --no-hash", "upload -- begin", "--quiet upload a.png -q",
		"sweep --older-than 7d --before=2026-11-30", "sniff --nohash x", "upload begin", "h",
		"sniff --files-from - -0 --exclude '*.log' dir",
	} {
		f.Add(seed)
	}
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	f.Fuzz(func(t *testing.T, line string) {
		in := append([]string{"attachctl"}, strings.Fields(line)...)
		given := slices.Clone(in)
		out, err := normalizeArgs(app, in)
		if !slices.Equal(in, given) {
			t.Fatalf("%q: the caller's arguments changed to %q", given, in)
		}
		if err != nil {
			var u *usage
			if !errors.As(err, &u) || u.msg == "" || u.help == "" {
				t.Fatalf("%q: %v is not a usage error with its hint", given, err)
			}
			return
		}
		again, err := normalizeArgs(app, out)
		if err != nil || !slices.Equal(again, out) {
			t.Fatalf("%q: rewritten to %q, then to %q, %v", given, out, again, err)
		}
	})
}
