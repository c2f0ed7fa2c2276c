package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// dropRig is an ObjectDrop over MapObjects that records each step, and fails the step named
// fail (a deletion by the first key it is given, "abort", "abortAll").
type dropRig struct {
	o     *MapObjects
	steps []string
	fail  string
}

func (r *dropRig) drop() ObjectRemoval {
	return ObjectRemoval{O: r.o,
		Walk: func(ctx context.Context, id string) ([]FolderObject, error) {
			keys, err := r.o.List(ctx, id+"/")
			var objs []FolderObject
			for _, k := range keys {
				objs = append(objs, FolderObject{Name: strings.TrimPrefix(k, id+"/")})
			}
			return objs, err
		},
		Delete: func(ctx context.Context, keys []string) error {
			if len(keys) == 0 {
				return nil
			}
			r.steps = append(r.steps, "delete "+strings.Join(keys, " "))
			if r.fail == keys[0] {
				return errors.New("refused")
			}
			for _, k := range keys {
				r.o.Delete(ctx, k, "")
			}
			return nil
		},
		DropNote: func(ctx context.Context, hex, id string) {
			r.steps = append(r.steps, "note "+hex)
			r.o.Delete(ctx, ".attachctl/source/"+hex, "")
		},
		Abort: func(_ context.Context, id, name, uploadID string) error {
			r.steps = append(r.steps, "abort "+id+"/"+name+" "+uploadID)
			if r.fail == "abort" {
				return errors.New("refused")
			}
			return nil
		},
		DropMultiparts: func(_ context.Context, id string) error {
			r.steps = append(r.steps, "abortAll "+id)
			if r.fail == "abortAll" {
				return errors.New("refused")
			}
			return nil
		},
	}
}

func (r *dropRig) put(t *testing.T, keys ...string) {
	for _, k := range keys {
		if _, err := r.o.Put(context.Background(), k, "", []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *dropRig) left(t *testing.T) []string {
	keys, err := r.o.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

const dropID = "0190f5c2-7b1e-7a3c-9d4e-5f6a7b8c9d0e"

func TestDropUnfinishedOrder(t *testing.T) {
	ctx := context.Background()
	part := ".attachctl/partial/" + dropID + "/"
	hex := strings.Repeat("ab", 32)
	note := ".attachctl/source/" + hex
	for _, c := range []struct {
		name  string
		di    *DroppedInfo
		keys  []string // besides the partial's info
		steps []string
		left  []string
	}{
		{"chunks, info last", nil, []string{part + "c/00000000000000000000", part + "c/00000000000000000005"},
			[]string{"delete " + part + "c/00000000000000000000 " + part + "c/00000000000000000005"}, nil},
		{"a stream's multipart upload before its partial", &DroppedInfo{Name: "a.bin", UploadID: "u1"}, nil,
			[]string{"abort " + dropID + "/a.bin u1"}, nil},
		{"a folder upload's files, its multiparts, its marker, then its partial",
			&DroppedInfo{Folder: true, Note: hex, Name: "d"},
			[]string{dropID + "/d/x", dropID + "/d/y/z", dropID + "/.used", note},
			[]string{"delete " + dropID + "/d/x " + dropID + "/d/y/z", "abortAll " + dropID, "delete " + dropID + "/.used", "note " + hex}, nil},
		{"a folder upload finished meanwhile keeps its files and note",
			&DroppedInfo{Folder: true, Note: hex, Name: "d"},
			[]string{dropID + "/d/x", dropID + "/.tree.b3", dropID + "/.used", note},
			nil, []string{note, dropID + "/.tree.b3", dropID + "/.used", dropID + "/d/x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &dropRig{o: &MapObjects{}}
			r.put(t, part+"info")
			r.put(t, c.keys...)
			if err := r.drop().DropUnfinished(ctx, dropID, c.di); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.steps, c.steps) {
				t.Errorf("steps\n%q\nwant\n%q", r.steps, c.steps)
			}
			if left := r.left(t); !slices.Equal(left, c.left) {
				t.Errorf("left %q, want %q", left, c.left)
			}
		})
	}
}

// A removal cut at any step leaves the info, so that the upload is still found and removed; an
// error with no code of its own is upload.unreadable.
func TestDropUnfinishedCutKeepsInfo(t *testing.T) {
	ctx := context.Background()
	part := ".attachctl/partial/" + dropID + "/"
	for _, fail := range []string{part + "c/00000000000000000000", "abort", "abortAll", dropID + "/d/x", dropID + "/.used"} {
		t.Run(fail, func(t *testing.T) {
			r := &dropRig{o: &MapObjects{}, fail: fail}
			r.put(t, part+"info", part+"c/00000000000000000000", dropID+"/d/x", dropID+"/.used")
			di := &DroppedInfo{Folder: true, Name: "d", UploadID: "u1"}
			err := r.drop().DropUnfinished(ctx, dropID, di)
			if err == nil || (fail == "abort" || strings.HasPrefix(fail, part)) && fault.CodeOf(err) != fault.UploadUnreadable {
				t.Fatalf("err %v, want it, upload.unreadable where no code was given", err)
			}
			if !slices.Contains(r.left(t), part+"info") {
				t.Errorf("the info went with a removal cut at %s: %q", fail, r.left(t))
			}
			if (fail == dropID+"/d/x" || fail == "abortAll") && !slices.Contains(r.left(t), dropID+"/.used") {
				t.Errorf("the marker went before the files and multiparts: %q", r.left(t))
			}
		})
	}
}
