package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// objectShelf is a store whose uploads are objects in memory: an ObjectLister over MapObjects
// (each object sized by its body) and the multipart uploads set in mps, the listings it was
// asked for counted, and a FolderReader (folderObjects) whose file uploads are files.
type objectShelf struct {
	folderObjects
	mps          []Multipart
	lists, pages int
}

func (s *objectShelf) object(ctx context.Context, key string) FolderObject {
	o, _ := s.MapObjects.Get(ctx, key)
	return FolderObject{Name: key, Size: int64(len(o.Body)), At: o.Modified, Version: o.Version}
}

func (s *objectShelf) ListObjects(ctx context.Context, prefix string, each func(FolderObject) error) error {
	s.lists++
	keys, _ := s.MapObjects.List(ctx, prefix)
	for _, k := range keys {
		if err := each(s.object(ctx, k)); err != nil {
			return err
		}
	}
	return nil
}

func (s *objectShelf) ListPage(ctx context.Context, prefix, start string, n int) ([]FolderObject, bool, error) {
	s.pages++
	keys, _ := s.MapObjects.List(ctx, prefix)
	var objs []FolderObject
	for _, k := range keys {
		if k <= start {
			continue
		}
		if len(objs) == n {
			return objs, true, nil
		}
		objs = append(objs, s.object(ctx, k))
	}
	return objs, false, nil
}

// HeadFile: a file upload's object carries a BLAKE3.
func (s *objectShelf) HeadFile(ctx context.Context, id, name string) (*Info, error) {
	info, err := s.folderObjects.HeadFile(ctx, id, name)
	if err == nil {
		info.Blake3 = strings.Repeat("0", 64)
	}
	return info, err
}

func (s *objectShelf) Multiparts(_ context.Context, prefix string) ([]Multipart, error) {
	var mps []Multipart
	for _, mp := range s.mps {
		if strings.HasPrefix(mp.ID+"/"+mp.Name, prefix) {
			mps = append(mps, mp)
		}
	}
	return mps, nil
}

var shelfMade = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// uploads reads the shelf: an unfinished upload's info is the object .attachctl/partial/<id>/info,
// whose body is its name (a stream's: "NAME stream", its parts two of 4 bytes).
func (s *objectShelf) uploads() *ObjectUploads {
	return &ObjectUploads{L: s, R: s, Loc: "s3://b/p", Jobs: 1, MinPage: 1, MaxPage: 1000,
		Where: func(key string) string { return strings.TrimSuffix("s3://b/p/"+key, "/") },
		Check: func(context.Context) (bool, error) { return true, nil },
		Info: func(ctx context.Context, id string) (*PartialInfo, *DroppedInfo, error) {
			o, err := s.MapObjects.Get(ctx, infoKey(id))
			if err != nil {
				return nil, nil, NotUnfinished(id, "s3://b/p")
			}
			name, stream := strings.CutSuffix(string(o.Body), " stream")
			up := ""
			if stream {
				up = "mp-" + id
			}
			return &PartialInfo{PartialOf: PartialOf{Name: name, Streamed: stream}, Size: -1, Made: shelfMade},
				&DroppedInfo{Name: name, UploadID: up}, nil
		},
		Parts: func(_ context.Context, id, name, uploadID string) ([]FolderObject, error) {
			if uploadID != "mp-"+id || name == "gone.bin" {
				return nil, fault.Errorf(fault.UploadMissing, "upload %s: its multipart upload is gone", id)
			}
			return []FolderObject{{Size: 4, At: shelfMade}, {Size: 4, At: shelfMade.Add(time.Hour)}}, nil
		},
	}
}

func (s *objectShelf) put(t *testing.T, kv ...string) {
	for i := 0; i < len(kv); i += 2 {
		if _, err := s.MapObjects.Put(context.Background(), kv[i], AnyVersion, []byte(kv[i+1])); err != nil {
			t.Fatal(err)
		}
	}
}

// shelfID is the i-th upload id, in key order.
func shelfID(i int) string { return fmt.Sprintf("0190f5c2-7b1e-7a3c-9d4e-%012d", i) }

// TestObjectUploadsList: one walk of the store groups each object under the id or the partial it
// lies under. A finished upload is read from its folder (its marker's last use), an unfinished
// one from its partial and its multipart uploads (its info, a stream's parts), what is no upload
// is named where the store names it; the store's internal objects are no upload's, and a partial
// or a multipart upload with nothing behind it any more is none.
func TestObjectUploadsList(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{folderObjects: folderObjects{files: map[string]error{"a.txt": nil}}}
	used := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	s.put(t, shelfID(1)+"/a.txt", "abc",
		InternalDir+"/store", "mark", InternalDir+"/source/"+strings.Repeat("ab", 32), "{}",
		infoKey(shelfID(2)), "b.bin", partialDir(shelfID(2))+"c/0", "12345", partialDir(shelfID(2))+"c/5", "67",
		infoKey(shelfID(3)), "s.bin stream",
		infoKey(shelfID(6)), "gone.bin stream",
		shelfID(5)+"/d/x.txt", "xx", shelfID(5)+"/d/y/z.txt", "zzz",
		"stray.txt", "?", shelfID(7), "an object named like an id")
	s.put(t, shelfID(7)+"/"+UsedName, "x")
	if _, err := WriteUseMark(ctx, &s.MapObjects, shelfID(1), UseMark{}, "used", used, ErrSweepKept); err != nil {
		t.Fatal(err)
	}
	s.mps = []Multipart{{ID: shelfID(3), Name: "s.bin", At: shelfMade}, {ID: shelfID(4), Name: "m.bin", At: shelfMade.Add(time.Minute)}}
	l, err := s.uploads().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l.Entries {
		got = append(got, fmt.Sprintf("%s %s %d finished=%v used=%s", e.ID, e.Name, e.Size, e.Finished, e.LastUsed.Format(time.RFC3339)))
	}
	want := []string{
		shelfID(1) + " a.txt 3 finished=true used=2026-03-04T05:06:07Z",
		shelfID(2) + " b.bin 7 finished=false used=" + s.stamp(ctx, partialDir(shelfID(2))+"c/5"),
		shelfID(3) + " s.bin 8 finished=false used=2026-01-02T04:04:05Z",
		shelfID(4) + " m.bin 0 finished=false used=2026-01-02T03:05:05Z",
		shelfID(5) + " d 5 finished=false used=" + s.stamp(ctx, shelfID(5)+"/d/y/z.txt"),
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var skips []string
	for _, sk := range l.Skipped {
		skips = append(skips, sk.Path+": "+sk.Why)
	}
	wantSkips := []string{"s3://b/p/" + shelfID(7) + "/: not an upload of this store: upload " + shelfID(7) + ": holds no object of an upload",
		"s3://b/p/" + shelfID(7) + ": " + SkipNotFolder,
		"s3://b/p/stray.txt: " + SkipNotID}
	slices.Sort(skips)
	if !slices.Equal(skips, wantSkips) {
		t.Errorf("skips %q, want %q", skips, wantSkips)
	}
	if s.lists != 1 || s.pages != 0 {
		t.Errorf("%d walks and %d pages for a listing, want one walk", s.lists, s.pages)
	}
}

// stamp is when the object at key was written, as the listing says it.
func (s *objectShelf) stamp(ctx context.Context, key string) string {
	o, _ := s.MapObjects.Get(ctx, key)
	return o.Modified.Format(time.RFC3339)
}

// TestObjectUploadsPartialStatus: Status reads an unfinished upload with its info, from walks of
// its id's folder and its partial; one with none (its chunks alone, its multipart upload alone),
// or none at all, is upload.missing.
func TestObjectUploadsPartialStatus(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{}
	s.put(t, infoKey(shelfID(2)), "b.bin", partialDir(shelfID(2))+"c/0", "12345",
		partialDir(shelfID(3))+"c/0", "123", shelfID(1)+"/a.txt", "abc")
	s.mps = []Multipart{{ID: shelfID(4), Name: "m.bin", At: shelfMade}}
	u := s.uploads()
	st, size, err := u.PartialStatus(ctx, shelfID(2))
	if err != nil || st.Name != "b.bin" || st.Bytes != 5 || size != -1 {
		t.Fatalf("%+v %d, %v", st, size, err)
	}
	for _, id := range []string{shelfID(3), shelfID(4), shelfID(1), shelfID(9)} {
		if st, _, err := u.PartialStatus(ctx, id); fault.CodeOf(err) != fault.UploadMissing || !strings.Contains(err.Error(), "no unfinished upload") {
			t.Errorf("%s: %+v, %v; want upload.missing", id, st, err)
		}
	}
	if objs, err := u.WalkPartial(ctx, shelfID(2)); err != nil || len(objs) != 2 || objs[0].Name != "c/0" || objs[1].Name != "info" {
		t.Errorf("the partial walked: %+v, %v", objs, err)
	}
}

// TestObjectUploadsTreeDir: a folder upload's objects, every one at once by its path from the
// id's folder, sorted, each named in verify's messages where the store names it; another id's
// objects are not its.
func TestObjectUploadsTreeDir(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{}
	s.put(t, shelfID(1)+"/d/b", "bb", shelfID(1)+"/d/a/c", "c", shelfID(1)+"/"+TreeListName, "l", shelfID(11)+"/d/x", "x")
	es, err := s.uploads().TreeDir(ctx, shelfID(1))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s %d %v %s", e.Name, e.Size, e.File, e.Where))
	}
	w := "s3://b/p/" + shelfID(1) + "/"
	want := []string{TreeListName + " 1 true " + w + TreeListName, "d/a/c 1 true " + w + "d/a/c", "d/b 2 true " + w + "d/b"}
	if !slices.Equal(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestObjectUploadsLookUpAll: the look-up of many ids reads each one's folder as a listing of it
// alone does, whatever the page and however the ids lie (before, between and after the uploads,
// repeated), in at most two pages per id (pages of one object excepted), and one page for ids
// side by side.
func TestObjectUploadsLookUpAll(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{folderObjects: folderObjects{files: map[string]error{"f.txt": nil}}}
	for i := 1; i <= 8; i++ {
		s.put(t, shelfID(i*10)+"/f.txt", "f")
		if i%2 == 0 {
			if _, err := WriteUseMark(ctx, &s.MapObjects, shelfID(i*10), UseMark{}, "used", time.Now(), ErrSweepKept); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.put(t, InternalDir+"/store", "mark")
	cases := map[string][]string{
		"all":     {shelfID(10), shelfID(20), shelfID(30), shelfID(40), shelfID(50), shelfID(60), shelfID(70), shelfID(80)},
		"reverse": {shelfID(80), shelfID(50), shelfID(20)},
		"absent":  {shelfID(0), shelfID(10), shelfID(15), shelfID(40), shelfID(99)},
		"repeats": {shelfID(20), shelfID(20), shelfID(60)},
		"spread":  {shelfID(10), shelfID(80)},
	}
	for _, page := range []int{1, 2, 3, 1000} {
		for name, ids := range cases {
			t.Run(fmt.Sprintf("%s/page%d", name, page), func(t *testing.T) {
				u := s.uploads()
				u.MinPage, u.MaxPage = page, page
				s.pages = 0
				got, err := u.LookUpAll(ctx, ids)
				if err != nil {
					t.Fatal(err)
				}
				if most := len(ids) * (1 + (2+page-1)/page); s.pages > most {
					t.Errorf("%d pages for %d ids, want at most %d", s.pages, len(ids), most)
				} else if page == 1000 && s.pages != 1 {
					t.Errorf("%d pages for ids side by side, want 1", s.pages)
				}
				for i, id := range ids {
					l, err := u.WalkID(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					alone, err := SettleFolder(ctx, s, id, l.Read())
					if err != nil {
						t.Fatal(err)
					}
					if got[i] != alone {
						t.Errorf("%s: %+v, a listing of its folder alone says %+v", id, got[i], alone)
					}
				}
			})
		}
	}
	got, _ := s.uploads().LookUpAll(ctx, cases["absent"])
	if got[0].Holds != HoldsNothing || got[1].Name != "f.txt" || got[1].Mark.Exists || got[3].Name != "f.txt" || !got[3].Mark.Exists {
		t.Fatalf("the store is not what the cases need: %+v", got)
	}
}

// TestObjectUploadsFinishedTree: a folder upload's files are opened only under its name, its
// listing's head read once per upload however many files are opened; one with no listing (not
// finished, or no folder upload) is upload.missing, and looked at again next time.
func TestObjectUploadsFinishedTree(t *testing.T) {
	ctx := context.Background()
	s := &objectShelf{}
	u := s.uploads()
	for range 3 {
		if err := u.FinishedTree(ctx, shelfID(1), "d"); fault.CodeOf(err) != fault.UploadMissing {
			t.Fatalf("no listing: %v, want upload.missing", err)
		}
	}
	if s.heads != 3 {
		t.Fatalf("%d HEADs of a listing not there, want one a call", s.heads)
	}
	s.tree = &ListingHead{Info: Info{ID: shelfID(1), Name: "d"}}
	for _, name := range []string{"d", "d", "e", "d"} {
		err := u.FinishedTree(ctx, shelfID(1), name)
		if (err == nil) != (name == "d") || err != nil && fault.CodeOf(err) != fault.UploadMissing {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if s.heads != 4 {
		t.Fatalf("%d HEADs in all, want the listing's read once", s.heads)
	}
}
