//go:build unix

// Command eachfloor is the floor under `attachctl upload --each DIR` for the folder benchmark: for
// every regular file under DIR (one worker per CPU) it does only the system calls that the store's
// layout for one upload a file needs (docs/store.md: STORE/<id>/<name>, appearing whole): read the
// file, make a folder for it in a staging folder, make the file in it and write it, then make
// everything durable at once (syncfs; sync elsewhere) and rename each folder into STORE. No
// hashing, no checks, no metadata, no manifest. What it takes is what no implementation of `upload
// --each` on that layout can beat on the machine; `cp -r` makes one file a file, this two and a
// rename.
//
// With -inplace it makes each folder in STORE at once and renames nothing: the layout with its
// "appears whole" rule dropped, so what no implementation of one folder an upload can beat even
// by giving up that rule.
//
//	go run ./scripts/bench/eachfloor [-inplace] DIR STORE
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

func main() {
	inplace := flag.Bool("inplace", false, "make each folder in STORE and rename nothing")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: eachfloor [-inplace] DIR STORE")
		os.Exit(2)
	}
	var files []string
	err := filepath.WalkDir(flag.Arg(0), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	check(err)
	store := flag.Arg(1)
	check(os.MkdirAll(filepath.Join(store, "stage"), 0o700))
	stage, err := unix.Open(filepath.Join(store, "stage"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	check(err)
	root, err := unix.Open(store, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	check(err)
	parent := stage
	if *inplace {
		parent = root
	}
	next := make(chan int, 256)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for i := range next {
				fd, err := unix.Open(files[i], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				check(err)
				n, err := unix.Read(fd, buf)
				check(err)
				unix.Close(fd)
				id := strconv.Itoa(i)
				check(unix.Mkdirat(parent, id, 0o700))
				dir, err := unix.Openat(parent, id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
				check(err)
				f, err := unix.Openat(dir, filepath.Base(files[i]), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o400)
				check(err)
				_, err = unix.Write(f, buf[:n])
				check(err)
				unix.Close(f)
				unix.Close(dir)
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	check(syncAll(stage))
	if *inplace {
		return
	}
	for i := range files {
		id := strconv.Itoa(i)
		check(unix.Renameat(stage, id, root, id))
	}
	check(unix.Fsync(root))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "eachfloor:", err)
		os.Exit(1)
	}
}
