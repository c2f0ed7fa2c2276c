package sweep_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/attachctl/attachctl/sweep"
)

// A cron job's sweep: uploads older than the cutoff and never used since go; one used after the
// cutoff stays. The same policy sweeps an S3 store through the same seam.
func ExampleRun() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sweep-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	b, err := open.Store(context.Background(), filepath.Join(dir, "chat-42"), open.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var ids []string
	for _, name := range []string{"old.log", "kept.png"} {
		id, err := b.Begin(ctx, name, 4)
		if err == nil {
			_, err = b.Write(ctx, id, 0, strings.NewReader("data"))
		}
		if err == nil {
			_, err = b.Finish(ctx, id, 4, "")
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		ids = append(ids, id)
	}
	// kept.png was used a minute from now: after the cutoff below.
	if err := b.MarkUsed(ctx, ids[1:], time.Now().Add(time.Minute)); err != nil {
		fmt.Println(err)
		return
	}

	sum, err := sweep.Run(ctx, b, sweep.Options{Before: time.Now().Add(time.Second)}, func(r sweep.Removed) error {
		fmt.Println("removed", r.Name)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Removed, sum.Kept)
	// Output:
	// removed old.log
	// 1 1
}
