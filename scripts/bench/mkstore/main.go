// Command mkstore lays out a store for the sweep benchmark directly: N finished uploads, the
// first half made (and their files' mtimes set) DAYS days ago, the rest made now.
//
//	go run ./scripts/bench/mkstore STORE N DAYS
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/attachctl/attachctl/ops"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: mkstore STORE N DAYS")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[2])
	days, _ := strconv.Atoi(os.Args[3])
	s, err := ops.Open(os.Args[1], true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	old := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				made := time.Now()
				if i%2 == 0 {
					made = old
				}
				if err := mk(s, i, made); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

func mk(s *ops.Store, i int, made time.Time) error {
	id, err := ops.NewID()
	if err != nil {
		return err
	}
	dir := s.UploadDir(id)
	name := fmt.Sprintf("file-%06d.txt", i)
	data := []byte(fmt.Sprintf("upload %d\n", i))
	b, _ := json.Marshal(ops.Meta{ID: id, Name: name, Size: int64(len(data)), Blake3: "0", Made: made.UTC()})
	if err := os.Mkdir(dir, ops.DirMode); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{name, data}, {ops.MetaName, b}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.b, ops.FileMode); err != nil {
			return err
		}
		os.Chtimes(p, made, made)
	}
	return os.Chtimes(dir, made, made)
}
