package acp_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/attachctl/attachctl/sniff"
)

// An agent's daemon resolves a prompt that names an upload by reference: the prompt carries
// acpmux-upload:ID, never the bytes; Resolve checks the reference, opens the upload through the
// store's guarded open, checks its BLAKE3, and, for an agent that takes embedded context (its
// initialize response says so), gives it the file's text; an image would go inline, and what the
// agent cannot take goes by path.
func ExampleResolve() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "acp-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(src, []byte("the build fails on line 42\n"), 0o600); err != nil {
		fmt.Println(err)
		return
	}

	// What `attachctl prepare` does for one file: sniff it, upload it, name it in a prompt.
	rec := &manifest.Record{Path: src}
	if err := sniff.Fill(rec, sniff.Options{}); err != nil {
		fmt.Println(err)
		return
	}
	b, err := open.Store(context.Background(), filepath.Join(dir, "chat-42"), open.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := os.Open(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	id, err := b.Begin(ctx, rec.Name, rec.Size)
	if err == nil {
		_, err = b.Write(ctx, id, 0, f)
	}
	if err == nil {
		_, err = b.Finish(ctx, id, rec.Size, rec.Blake3)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	rec.Upload = &manifest.Upload{ID: id, Store: b.Location(), Path: b.Features().Pather.FinishedPath(id, rec.Name)}
	prompt, err := acp.Prompt([]*manifest.Record{rec}, acp.PromptOptions{Session: "s1", Text: "Why does it fail?", HasText: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Contains(string(prompt), acp.RefScheme+id), strings.Contains(string(prompt), "line 42"))

	res, err := acp.Resolve(prompt, acp.Backend(ctx, b), acp.Options{Caps: acp.Caps{Image: true, EmbeddedContext: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	var out bytes.Buffer
	if _, err := res.WriteTo(&out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Embedded, res.ByPath, res.IDs[0] == id, strings.Contains(out.String(), "line 42"))
	// Output:
	// true false
	// 1 0 true true
}
