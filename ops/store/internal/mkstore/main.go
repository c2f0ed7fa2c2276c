//go:build unix

// Command mkstore lays out a store for the sweep benchmark (scripts/bench/sweep.sh): N finished
// uploads, the even ones made (and their files' and folders' times set) DAYS days ago, the rest
// made now. It builds where the local store does (Unix).
//
// The store is made through the seam; the uploads are written in the layout docs/store.md gives
// (STORE/<id>/<name> and its .upload.json, read-only, in a 0700 folder), straight into place and
// with no fsync: no public API can make a backdated upload (an upload is made when it finishes),
// and uploading through the seam would cost an fsync per upload for the benchmark's hundred
// thousand. It lives under ops/store/internal because it opens the local backend directly.
//
//	go run ./ops/store/internal/mkstore STORE N DAYS
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/attachctl/attachctl/ops"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/internal/local"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: mkstore STORE N DAYS")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[2])
	days, _ := strconv.Atoi(os.Args[3])
	if err := run(os.Args[1], n, days); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run lays out the store at dir: n uploads, the even ones made days days ago.
func run(dir string, n, days int) error {
	b, err := local.New(dir)
	if err == nil { // a batch makes or marks the store; it holds nothing until an upload joins it
		_, err = b.Features().Batcher.NewBatch(context.Background())
	}
	if err != nil {
		return err
	}
	old := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	return store.ForEach(context.Background(), 8, n, func(i int) error {
		made := time.Now()
		if i%2 == 0 {
			made = old
		}
		return put(b.Location(), fmt.Sprintf("file-%06d.txt", i), []byte(fmt.Sprintf("upload %d\n", i)), made)
	})
}

// put writes a finished upload of data named name, made at made, into the store at dir: its
// folder's times last, as a folder finished then would have them, since tools that judge an
// upload by its folder's mtime (the benchmark's find) see its age.
func put(dir, name string, data []byte, made time.Time) error {
	id, err := store.NewID()
	if err != nil {
		return err
	}
	sum, _, _ := ops.Hash(bytes.NewReader(data), nil) // a reader of memory does not fail
	meta, _ := json.Marshal(&store.Info{ID: id, Name: name, Size: int64(len(data)), Blake3: sum, Made: made.UTC()})
	up := filepath.Join(dir, id)
	if err := os.Mkdir(up, local.DirMode); err != nil {
		return err
	}
	for file, b := range map[string][]byte{name: data, local.MetaName: append(meta, '\n')} {
		if err := os.WriteFile(filepath.Join(up, file), b, local.ReadOnlyMode); err != nil {
			return err
		}
		if err := os.Chtimes(filepath.Join(up, file), made, made); err != nil {
			return err
		}
	}
	return os.Chtimes(up, made, made)
}
