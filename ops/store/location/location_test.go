package location

import (
	"context"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

func TestScheme(t *testing.T) {
	for loc, want := range map[string]string{
		"s3://bucket/prefix": "s3",
		"/tmp/store":         "",
		"rel/dir":            "",
		`C://x`:              "",
		"weird dir://x":      "",
		"s3+http://b/p":      "s3+http",
		"":                   "",
	} {
		if got := Scheme(loc); got != want {
			t.Errorf("Scheme(%q) = %q, want %q", loc, got, want)
		}
	}
}

func TestOpenByScheme(t *testing.T) {
	r := NewRegistry()
	var opened []string
	for _, scheme := range []string{"", "s3"} {
		r.Register(Factory{Scheme: scheme, Open: func(ctx context.Context, loc string) (store.Backend, error) {
			opened = append(opened, scheme+"|"+loc)
			return nil, nil
		}})
	}
	ctx := context.Background()
	if _, err := r.Open(ctx, "s3://b/p"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(ctx, "/abs/dir/../dir"); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 2 || opened[0] != "s3|s3://b/p" || opened[1] != "|/abs/dir" {
		t.Fatalf("opened %q", opened)
	}
	_, err := r.Open(ctx, "gs://b/p")
	if fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("unknown scheme: %v, want upload.invalid", err)
	}
}
