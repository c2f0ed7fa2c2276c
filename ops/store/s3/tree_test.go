package s3

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store/s3/s3test"
	"github.com/attachctl/attachctl/sniff"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestTreeResumeSendsWhatIsMissing: a folder upload interrupted, then one of its objects damaged
// on the server and an object the folder does not hold put beside them, is resumed by sending
// only the files the server does not hold whole (by size and ETag) and the damaged one; the
// stray object is gone before the upload is finished, so verify finds the tree exact.
func TestTreeResumeSendsWhatIsMissing(t *testing.T) {
	srv := s3test.Start(t)
	s := newStore(t, srv)
	bg := context.Background()
	root := filepath.Join(t.TempDir(), "logs")
	var rels []string
	for i := 0; i < 40; i++ {
		rel := filepath.Join(string(rune('a'+i%4)), strings.Repeat("x", i+1)+".txt")
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte('A' + i)}, 100+i), 0o600); err != nil {
			t.Fatal(err)
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	sort.Strings(rels)
	rec := &manifest.Record{Path: root}
	if err := sniff.FillFolder(rec, sniff.Options{}, sniff.WalkOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sent := map[string]int{}
	s.treeSent = func(rel string) {
		mu.Lock()
		sent[rel]++
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(bg)
	n := 0
	err := s.UploadRecord(ctx, rec, UploadOptions{Progress: func(int64) {
		if n++; n == 10 {
			cancel()
		}
	}})
	cancel()
	if err == nil || !errors.Is(err, context.Canceled) && manifest.CodeOf(err) != manifest.UploadMissing {
		t.Fatalf("interrupted upload: %v", err)
	}
	l, err := s.List(bg)
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Finished {
		t.Fatalf("after the interruption: %+v, %v", l, err)
	}
	id := l.Entries[0].ID
	dir := s.treeDir(id, "logs")
	var held []string
	s.listObjects(bg, dir, func(o types.Object) error {
		held = append(held, strings.TrimPrefix(aws.ToString(o.Key), dir))
		return nil
	})
	if len(held) == 0 || len(held) == len(rels) {
		t.Fatalf("%d of %d objects on the server after the interruption; want some", len(held), len(rels))
	}
	damaged := held[0]
	put := func(key, body string) {
		if _, err := s.client.PutObject(bg, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put(dir+damaged, "not the source's bytes")
	put(dir+"stray.txt", "a file the folder does not hold")

	clear(sent)
	rec2 := &manifest.Record{Path: root, Kind: manifest.KindFolder, Blake3: rec.Blake3}
	if err := s.UploadRecord(bg, rec2, UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec2.Upload == nil || rec2.Upload.ID != id {
		t.Fatalf("resumed as %+v, want %s", rec2.Upload, id)
	}
	keep := map[string]bool{}
	for _, h := range held[1:] {
		keep[h] = true
	}
	for _, rel := range rels {
		switch {
		case keep[rel] && sent[rel] > 0:
			t.Errorf("%s was on the server whole and was sent again", rel)
		case !keep[rel] && sent[rel] != 1:
			t.Errorf("%s was sent %d times on the resume, want once", rel, sent[rel])
		}
	}
	if _, err := s.VerifyTree(bg, id, nil); err != nil {
		t.Fatalf("verify after the resume: %v", err)
	}
	// Run again: named again, nothing sent.
	clear(sent)
	if err := s.UploadRecord(bg, &manifest.Record{Path: root, Kind: manifest.KindFolder, Blake3: rec.Blake3}, UploadOptions{}); err != nil || len(sent) != 0 {
		t.Fatalf("the same folder again: %v, sent %v", err, sent)
	}
}
