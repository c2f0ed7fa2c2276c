package shrink

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/shrink/rsstest"
)

// child shrinks the files spec names ("maxMemory,outDir,path,path...") all at once, as the
// command does with --jobs len(paths), says on stderr what each became and on stdout its peak
// RSS in KiB; 1 if any failed.
func child(spec string) int {
	f := strings.Split(spec, ",")
	maxMemory, _ := strconv.ParseInt(f[0], 10, 64)
	debug.SetMemoryLimit(maxMemory / 4 * 3) // as cmd/attachctl's limitHeap
	var wg sync.WaitGroup
	failed := false
	for _, p := range f[2:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := &manifest.Record{Path: p, Name: filepath.Base(p), Kind: manifest.KindImage}
			if err := Record(rec, Options{MaxMemory: maxMemory, OutDir: f[1]}); err != nil || rec.Shrink == nil {
				fmt.Fprintln(os.Stderr, p, err)
				failed = true
				return
			}
			fmt.Fprintln(os.Stderr, p, rec.Shrink.Action, rec.Shrink.Reason)
		}()
	}
	wg.Wait()
	if err := rsstest.PrintPeak(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}
