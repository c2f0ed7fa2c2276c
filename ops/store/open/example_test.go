package open_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store/open"
)

// An embedder opens a store by its location: a folder here, s3://BUCKET/PREFIX as well with the
// same call. The upload is written, finished create-only with its size and BLAKE3 checked, and
// read back through the store's guarded open; the store is then found by its mark, as
// `sweep --stores-under` finds the stores of every chat.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "open-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	opts := open.Options{
		LimitsWait: 10 * time.Second,
		// Only s3:// stores read these: a MinIO or versitygw at http://127.0.0.1:7070 needs the
		// path style (and AWS_ENDPOINT_URL and the credentials from the environment).
		S3: open.S3Options{PathStyle: true, ReadTimeout: 30 * time.Second},
	}
	b, err := open.Store(ctx, filepath.Join(dir, "chat-42"), opts)
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
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %d %q\n", info.Name, info.Size, got)

	// The finished upload's file has the store's read-only mode.
	fi, err := os.Stat(filepath.Join(dir, "chat-42", info.ID, info.Name))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fi.Mode().Perm() == open.ReadOnlyMode)

	stores, skipped, err := open.StoresUnder(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range stores {
		rel, _ := filepath.Rel(dir, s)
		fmt.Println("store:", rel)
	}
	fmt.Println(len(skipped), "skipped")

	// A scheme with no backend is refused.
	_, err = open.Store(ctx, "gs://bucket/chat", opts)
	fmt.Println(fault.CodeOf(err))
	// Output:
	// note.txt 13 "hello, model\n"
	// true
	// store: chat-42
	// 0 skipped
	// upload.invalid
}
