package location_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/location"
	"github.com/attachctl/attachctl/ops/store/open"
)

// An embedder starts from attachctl's backends (ops/store/open, whose example uploads through
// the store it opens), registers a backend of its own for another scheme, and opens stores by
// their location: a folder goes to the folder store, mem:// to its own factory, and a scheme
// nobody registered is refused, naming the ones that are.
func ExampleRegistry() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "location-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	reg := open.Registry(open.Options{})
	reg.Register(location.Factory{Scheme: "mem", Open: func(_ context.Context, loc string) (store.Backend, error) {
		return nil, fault.Errorf(fault.UploadInvalid, "store %s: this program keeps no store in memory yet", loc)
	}})

	b, err := reg.Open(ctx, filepath.Join(dir, "chat-42"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(b.Location() == filepath.Join(dir, "chat-42"))

	_, err = reg.Open(ctx, "mem://chat-42")
	fmt.Println(err)
	_, err = reg.Open(ctx, "gs://bucket/chat")
	fmt.Println(err)
	// Output:
	// true
	// store mem://chat-42: this program keeps no store in memory yet (upload.invalid)
	// store "gs://bucket/chat": no store of scheme gs:// (a folder, or mem://, s3://) (upload.invalid)
}
