package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "0", want: 0},
		{in: "524288", want: 524288},
		{in: "500k", want: 500000},
		{in: "500K", want: 500000},
		{in: "500kB", want: 500000},
		{in: "500KB", want: 500000},
		{in: "500kb", want: 500000},
		{in: "4MB", want: 4000000},
		{in: "4M", want: 4000000},
		{in: "4MiB", want: 4 << 20},
		{in: "4Mi", want: 4 << 20},
		{in: "4mib", want: 4 << 20},
		{in: "512KiB", want: 512 << 10},
		{in: "1.5KiB", want: 1536},
		{in: "1.5MB", want: 1500000},
		{in: "2GiB", want: 2 << 30},
		{in: "3T", want: 3e12},
		{in: "1PiB", want: 1 << 50},
		{in: "7EiB", want: 7 << 60},
		{in: "9EB", want: 9e18},
		{in: "10B", want: 10},
		{in: "1.5B", err: "not a whole number of bytes"},
		{in: "0.1k", want: 100},
		{in: "0.0001k", err: "not a whole number of bytes"},
		{in: "8EiB", err: "too large"},
		{in: "99999999999999999999", err: "too large"},
		{in: "", err: "takes a count of bytes"},
		{in: "-1", err: "takes a count of bytes"},
		{in: "1.", err: "takes a count of bytes"},
		{in: ".5k", err: "takes a count of bytes"},
		{in: "500 k", err: "takes a count of bytes"},
		{in: "500x", err: "takes a count of bytes"},
		{in: "4iB", err: "takes a count of bytes"},
		{in: "4MiBB", err: "takes a count of bytes"},
		{in: "0x10", err: "takes a count of bytes"},
		{in: "1e6", err: "takes a count of bytes"},
	} {
		got, err := parseBytes(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseBytes(%q) = %d, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// formatBytes writes what parseBytes reads back, in the largest unit that divides the count.
func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1", 999: "999", 1000: "1kB", 1024: "1KiB", 524288: "512KiB",
		500000: "500kB", 3932160: "3840KiB", 1 << 30: "1GiB", 1536: "1536", 1500: "1500", 15000000: "15MB"} {
		got := formatBytes(n)
		if got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
		if back, err := parseBytes(got); err != nil || back != n {
			t.Errorf("parseBytes(formatBytes(%d)) = %d, %v", n, back, err)
		}
	}
}

// A byte flag set in one run does not carry into the next app made in the same process.
func TestBytesFlagFresh(t *testing.T) {
	var out, errs bytes.Buffer
	dir := t.TempDir()
	if code := runWith([]string{"attachctl", "upload", "begin", "--store", dir, "--name", "a", "--size", "4KiB"}, strings.NewReader(""), &out, &errs); code != 0 {
		t.Fatalf("begin --size 4KiB: exit %d: %s", code, errs.String())
	}
	out.Reset()
	if code := runWith([]string{"attachctl", "upload", "begin", "--store", dir, "--name", "b"}, strings.NewReader(""), &out, &errs); code != 0 {
		t.Fatalf("begin: exit %d: %s", code, errs.String())
	}
	id := strings.Split(out.String(), `"`)[3]
	out.Reset()
	if code := runWith([]string{"attachctl", "upload", "status", "--store", dir, "--id", id}, strings.NewReader(""), &out, &errs); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), `"size":-1`) {
		t.Errorf("the second upload, begun without --size, has %s; want size -1", out.String())
	}
}
