//go:build unix

// Command headfloor is the floor under `attachctl sniff --no-hash` for the sniff benchmark: it walks
// the folders (lexical order, as sniff does) and, with one worker per CPU, does for every regular
// file only the system calls any content sniffer needs (open, fstat, read of the 16 KiB head,
// close), and nothing else: no type detection, no text check, no output, no flags, no progress
// bar. What it takes is what no implementation of sniff that reads each file's head in its own
// system calls can beat on the machine.
//
//	go run ./scripts/bench/headfloor DIR...
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: headfloor DIR...")
		os.Exit(2)
	}
	paths := make(chan string, 256)
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 16<<10)
			var st unix.Stat_t
			k := 0
			for p := range paths {
				fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
				if err != nil {
					continue
				}
				if unix.Fstat(fd, &st) == nil {
					if _, err := unix.Read(fd, buf); err == nil {
						k++
					}
				}
				unix.Close(fd)
			}
			mu.Lock()
			n += k
			mu.Unlock()
		}()
	}
	for _, root := range os.Args[1:] {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				paths <- p
			}
			return nil
		})
	}
	close(paths)
	wg.Wait()
	if n == 0 {
		fmt.Fprintln(os.Stderr, "headfloor: no file read")
		os.Exit(1)
	}
}
