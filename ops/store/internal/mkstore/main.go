//go:build unix

// Command mkstore lays out a store for the sweep benchmark (scripts/bench/sweep.sh): N finished
// uploads, the even ones made (and their files' times set) DAYS days ago, the rest made now. It
// builds where the local store does (Unix): local.MakeFinished is there only.
//
// It lives under ops/store/internal because the backends are internal to ops/store and no public
// API can make a backdated upload: an upload is made when it finishes, and a test hook that says
// otherwise has no place in the API embedders see. Uploading through the seam instead would cost
// an fsync per upload for the benchmark's hundred thousand.
//
//	go run ./ops/store/internal/mkstore STORE N DAYS
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/attachctl/attachctl/ops/store/internal/local"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: mkstore STORE N DAYS")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[2])
	days, _ := strconv.Atoi(os.Args[3])
	b, err := local.New(os.Args[1])
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
				name := fmt.Sprintf("file-%06d.txt", i)
				if _, err := local.MakeFinished(b, name, []byte(fmt.Sprintf("upload %d\n", i)), made); err != nil {
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
