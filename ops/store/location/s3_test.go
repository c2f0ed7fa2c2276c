package location

import (
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// What an s3:// location names, and what is no such location (upload.invalid).
func TestParseS3Location(t *testing.T) {
	t.Setenv("ATTACHCTL_S3_PATH_STYLE", "")
	t.Setenv("ATTACHCTL_S3_CONNECT_TIMEOUT", "")
	t.Setenv("ATTACHCTL_S3_READ_TIMEOUT", "")
	for _, c := range []struct{ uri, bucket, prefix, norm string }{
		{"s3://b/p", "b", "p", "s3://b/p"},
		{"s3://b/chat/42/", "b", "chat/42", "s3://b/chat/42"},
		{"s3://b", "b", "", "s3://b"},
		{"s3://b/", "b", "", "s3://b"},
		{"s3://b.with-dots/p", "b.with-dots", "p", "s3://b.with-dots/p"},
	} {
		l, err := ParseS3(c.uri, S3Options{})
		if err != nil || l.Bucket != c.bucket || l.Prefix != c.prefix || l.URI != c.norm {
			t.Errorf("ParseS3(%q) = %q %q %q, %v; want %q %q %q", c.uri, l.Bucket, l.Prefix, l.URI, err, c.bucket, c.prefix, c.norm)
		}
	}
	for _, uri := range []string{
		"s3://b/a//p", "s3://b/a/./p", "s3://b/a/../p", "s3://b/..", // parts of the prefix
		"s3:///p", "http://b/p", "s3:b/p", "b/p", // no bucket, or no s3://
		"s3://b/p?versionId=1", "s3://b/p#x", // a query or fragment, which no key has
		"s3://key:secret@b/p", "s3://b:9000/p", "s3://b:/p", // credentials and endpoints come from the AWS settings
	} {
		if l, err := ParseS3(uri, S3Options{}); fault.CodeOf(err) != fault.UploadInvalid {
			t.Errorf("ParseS3(%q) = %+v, %v; want upload.invalid", uri, l, err)
		}
	}
}

// The options of an s3:// location: given, else from their variables, else the defaults; a
// variable that is no timeout is upload.invalid, unless the option is given.
func TestParseS3Options(t *testing.T) {
	env := func(path, connect, read string) {
		t.Setenv("ATTACHCTL_S3_PATH_STYLE", path)
		t.Setenv("ATTACHCTL_S3_CONNECT_TIMEOUT", connect)
		t.Setenv("ATTACHCTL_S3_READ_TIMEOUT", read)
	}
	for _, c := range []struct {
		name                string
		path, connect, read string
		o                   S3Options
		want                S3Options
		bad                 bool
	}{
		{name: "defaults", want: S3Options{ConnectTimeout: DefaultS3ConnectTimeout, ReadTimeout: DefaultS3ReadTimeout}},
		{name: "variables", path: "1", connect: "2.5", read: "1m",
			want: S3Options{PathStyle: true, ConnectTimeout: 2500 * time.Millisecond, ReadTimeout: time.Minute}},
		{name: "path style only 1", path: "true", want: S3Options{ConnectTimeout: DefaultS3ConnectTimeout, ReadTimeout: DefaultS3ReadTimeout}},
		{name: "given over variables", path: "0", connect: "junk", read: "0",
			o:    S3Options{PathStyle: true, UnsafeNoConditional: true, MaxAttempts: 7, ConnectTimeout: time.Second, ReadTimeout: 2 * time.Second},
			want: S3Options{PathStyle: true, UnsafeNoConditional: true, MaxAttempts: 7, ConnectTimeout: time.Second, ReadTimeout: 2 * time.Second}},
		{name: "no attempts below zero", o: S3Options{MaxAttempts: -2}, want: S3Options{ConnectTimeout: DefaultS3ConnectTimeout, ReadTimeout: DefaultS3ReadTimeout}},
		{name: "zero read timeout", read: "0", bad: true},
		{name: "negative connect timeout", connect: "-3", bad: true},
		{name: "no duration", read: "5x", bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env(c.path, c.connect, c.read)
			l, err := ParseS3("s3://b/p", c.o)
			switch {
			case c.bad && fault.CodeOf(err) != fault.UploadInvalid:
				t.Fatalf("got %+v, %v; want upload.invalid", l.S3Options, err)
			case !c.bad && (err != nil || l.S3Options != c.want):
				t.Fatalf("got %+v, %v; want %+v", l.S3Options, err, c.want)
			}
		})
	}
}

func TestParseTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"30s": 30 * time.Second, "2m": 2 * time.Minute, "5": 5 * time.Second, "0.5": 500 * time.Millisecond} {
		if d, ok := ParseTimeout(v); !ok || d != want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", v, d, ok, want)
		}
	}
	for _, v := range []string{"", "0", "0s", "-1", "-1s", "5x", "1 m"} {
		if d, ok := ParseTimeout(v); ok {
			t.Errorf("ParseTimeout(%q) = %v, true; want false", v, d)
		}
	}
}
