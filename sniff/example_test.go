package sniff_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/sniff"
)

// Fill tells what a file is from its bytes, not its name: this ".png" holds text.
func ExampleFill() {
	dir, err := os.MkdirTemp("", "sniff-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "not-a-picture.png")
	if err := os.WriteFile(path, []byte("hello, model\n"), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	rec := &manifest.Record{Path: path}
	if err := sniff.Fill(rec, sniff.Options{}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Name, rec.Size, rec.Kind, rec.Mime)
	fmt.Println(rec.Blake3) // what b3sum prints for the same bytes

	// A file that is not there is an error with its code, and the record says so too.
	missing := &manifest.Record{Path: filepath.Join(dir, "gone.txt")}
	err = sniff.Fill(missing, sniff.Options{})
	fmt.Println(fault.CodeOf(err))
	// Output:
	// not-a-picture.png 13 text text/plain
	// 6856e7db040c42f6da8b616a61faac3a84edcd23fafe0d54deb9b22d2f73d07d
	// file.missing
}
