package location_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/local"
	"github.com/attachctl/attachctl/ops/store/location"
)

// An embedder registers the backends it wants and opens a store by its location: a folder here,
// s3://BUCKET/PREFIX with the S3 backend registered. The upload is written, finished create-only
// with its size and BLAKE3 checked, and read back through the store's guarded open.
func ExampleRegistry() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "location-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	reg := location.NewRegistry()
	reg.Register(location.Factory{Scheme: "", Open: func(_ context.Context, dir string) (store.Backend, error) {
		return local.New(dir)
	}})
	b, err := reg.Open(ctx, filepath.Join(dir, "chat-42"))
	if err != nil {
		fmt.Println(err)
		return
	}

	body := "hello, model\n"
	id, err := b.Begin(ctx, "note.txt", int64(len(body)))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := b.Write(ctx, id, 0, strings.NewReader(body)); err != nil {
		fmt.Println(err)
		return
	}
	info, err := b.Finish(ctx, id, int64(len(body)), "6856e7db040c42f6da8b616a61faac3a84edcd23fafe0d54deb9b22d2f73d07d")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := b.Open(ctx, info.ID, info.Name)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %d %q\n", info.Name, info.Size, got)

	// A scheme nobody registered is refused, naming the ones that are.
	_, err = reg.Open(ctx, "gs://bucket/chat")
	fmt.Println(fault.CodeOf(err))
	// Output:
	// note.txt 13 "hello, model\n"
	// upload.invalid
}
