package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// TestObjectMeta checks the rules of an upload's object metadata: what a listing's carries (written
// by ListingMetadata, read back by ReadListingHead), how it tells a folder upload's listing from a
// file upload named TreeListName, and that neither is an upload without its BLAKE3.
func TestObjectMeta(t *testing.T) {
	const id = "0190c4d2-0000-7000-8000-000000000001"
	sum := strings.Repeat("ab", 32)
	made := time.Date(2026, 12, 4, 9, 0, 0, 0, time.FixedZone("x", 3600))
	listing := ListingMetadata(&TreeMeta{Info: Info{Name: "docs", Size: 42, Blake3: sum}, Files: 3}, "beef")
	with := func(md map[string]string, k, v string) map[string]string {
		c := map[string]string{}
		for kk, vv := range md {
			c[kk] = vv
		}
		if v == "" {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}

	t.Run("listing", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			md   map[string]string
			want *ListingHead // nil: no listing's
			code fault.Code
		}{
			{"written and read back", listing, &ListingHead{Info: Info{ID: id, Name: "docs", Size: 42, Blake3: sum, Made: made.UTC()}, Note: "beef"}, ""},
			{"no note: written before it was kept", with(listing, "note", ""), &ListingHead{Info: Info{ID: id, Name: "docs", Size: 42, Blake3: sum, Made: made.UTC()}}, ""},
			{"a file upload's: only a BLAKE3", map[string]string{"blake3": sum}, nil, ""},
			{"no name", with(listing, "name", ""), nil, ""},
			{"no size", with(listing, "size", ""), nil, ""},
			{"size not a number", with(listing, "size", "x"), nil, ""},
			{"no files", with(listing, "files", ""), nil, ""},
			{"files not a number", with(listing, "files", "many"), nil, ""},
			{"no BLAKE3", with(listing, "blake3", ""), nil, fault.UploadUnreadable},
			{"BLAKE3 not hex", with(listing, "blake3", strings.Repeat("zz", 32)), nil, fault.UploadUnreadable},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := ReadListingHead(id, "P/"+id+"/.tree.b3", tc.md, made)
				if fault.CodeOf(err) != tc.code || (err == nil) != (tc.code == "") {
					t.Fatalf("err %v, want code %q", err, tc.code)
				}
				if tc.code != "" {
					if !strings.Contains(err.Error(), "P/"+id+"/.tree.b3") {
						t.Errorf("%v does not name the object", err)
					}
					return
				}
				if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			})
		}
	})

	t.Run("file", func(t *testing.T) {
		for _, tc := range []struct {
			name, obj string
			md        map[string]string
			code      fault.Code
			noMeta    bool
		}{
			{"a file upload", "a.txt", map[string]string{"blake3": sum}, "", false},
			{"a file upload named .tree.b3", TreeListName, map[string]string{"blake3": sum}, "", false},
			{"a listing whose metadata is gone", TreeListName, listing, fault.UploadMissing, true},
			{"a listing's metadata on another name", "a.txt", listing, "", false},
			{"no BLAKE3", "a.txt", map[string]string{}, fault.UploadUnreadable, false},
			{"BLAKE3 too short", "a.txt", map[string]string{"blake3": "abcd"}, fault.UploadUnreadable, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				info, err := ObjectInfo(id, tc.obj, "s3://b/P", "s3://b/P/"+id+"/"+tc.obj, 7, tc.md, made)
				if fault.CodeOf(err) != tc.code || (err == nil) != (tc.code == "") {
					t.Fatalf("err %v, want code %q", err, tc.code)
				}
				if errors.Is(err, ErrNoTreeMeta) != tc.noMeta {
					t.Errorf("err %v: ErrNoTreeMeta %v, want %v", err, !tc.noMeta, tc.noMeta)
				}
				if tc.noMeta && !strings.HasPrefix(err.Error(), "upload "+id+": not a finished upload in store s3://b/P: ") {
					t.Errorf("%v is not worded as every store's upload.missing", err)
				}
				if err != nil {
					if !strings.Contains(err.Error(), "s3://b/P/"+id+"/"+tc.obj) {
						t.Errorf("%v does not name the object", err)
					}
					return
				}
				want := Info{ID: id, Name: tc.obj, Size: 7, Blake3: sum, Made: made.UTC()}
				if *info != want {
					t.Errorf("got %+v, want %+v", *info, want)
				}
			})
		}
	})
}

// TestFolderUploadMeta checks what a folder upload's metadata and listing head say for Recognize:
// each refusal, and that Made and the listed BLAKE3 are the listing's.
func TestFolderUploadMeta(t *testing.T) {
	const id = "0190c4d2-0000-7000-8000-000000000001"
	sum, other := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	made, finished := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC), time.Date(2026, 12, 4, 9, 5, 0, 0, time.UTC)
	meta, _ := json.Marshal(&TreeMeta{Info: Info{ID: id, Name: "docs", Size: 42, Blake3: sum, Made: made}, Kind: KindFolder, Files: 3, Sizes: []int64{40, 1, 1}})
	fileMeta, _ := json.Marshal(&TreeMeta{Info: Info{ID: id, Name: "docs", Size: 42, Blake3: sum, Made: made}})
	head := &ListingHead{Info: Info{ID: id, Name: "docs", Size: 42, Blake3: other, Made: finished}}
	for _, tc := range []struct {
		name string
		b    []byte
		head *ListingHead
		ok   bool
	}{
		{"a folder upload", meta, head, true},
		{"no listing head", meta, nil, false},
		{"metadata not JSON", []byte("{"), head, false},
		{"a file upload's metadata", fileMeta, head, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := FolderUploadMeta(id, "P/"+id+"/"+MetaName, tc.b, tc.head)
			if !tc.ok {
				if fault.CodeOf(err) != fault.UploadUnreadable {
					t.Fatalf("got %+v, %v; want upload.unreadable", m, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Info{ID: id, Name: "docs", Size: 42, Blake3: sum, Made: finished}
			if *m.Info != want || m.Recorded != id || m.Listed != other || !m.Folder || m.Files != 3 {
				t.Errorf("got %+v (%+v)", m, *m.Info)
			}
		})
	}
}

// TestPutFolderUpload: a folder upload is finished by its metadata, then its listing written
// create-only with the listing's metadata; a run that finds another listing there is
// upload.hashMismatch and changes nothing. (One that finds the same bytes there is done, as the
// backend's write finds its own: S3's TestTreePublishFinishedMeanwhile.)
func TestPutFolderUpload(t *testing.T) {
	ctx := context.Background()
	o := &MapObjects{}
	m := &TreeMeta{Info: Info{ID: "u1", Name: "d", Size: 3, Blake3: strings.Repeat("ab", 32)}, Files: 2, Kind: KindFolder}
	listing := []byte("listing\n")
	if err := PutFolderUpload(ctx, o, m, "cd", listing); err != nil {
		t.Fatal(err)
	}
	lo, err := o.Get(ctx, "u1/"+TreeListName)
	if err != nil || string(lo.Body) != string(listing) || lo.Meta["note"] != "cd" || lo.Meta["name"] != "d" || lo.Meta["blake3"] != m.Blake3 {
		t.Fatalf("the listing: %+v, %v", lo, err)
	}
	if mo, err := o.Get(ctx, "u1/"+MetaName); err != nil || string(mo.Body) != string(m.Encode()) {
		t.Fatalf("the metadata: %q, %v", mo.Body, err)
	}
	if err := PutFolderUpload(ctx, o, m, "cd", []byte("another\n")); fault.CodeOf(err) != fault.UploadHashMismatch {
		t.Fatalf("another tree finished meanwhile: %v, want upload.hashMismatch", err)
	}
	if again, _ := o.Get(ctx, "u1/"+TreeListName); again.Version != lo.Version {
		t.Fatalf("the listing was replaced")
	}
}
