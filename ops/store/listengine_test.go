package store

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// memList is the smallest ListBackend: a store's top, its uploads' metadata and its partials in
// maps. It tests the listing's rules apart from any backend.
type memList struct {
	missing  bool
	top      []TopEntry
	metas    map[string]*UploadMeta // by id; absent: unreadable
	parts    []TopEntry
	partials map[string]UnfinishedState
	partErr  map[string]error
	slash    bool // ListProperties.FolderSlash
}

func (m *memList) ListProperties() ListProperties {
	return ListProperties{Jobs: 3, FolderSlash: m.slash}
}

func (m *memList) ListTop(context.Context) ([]TopEntry, string, bool, error) {
	return m.top, "/s", !m.missing, nil
}

func (m *memList) ReadUpload(_ context.Context, c Candidate) (*UploadMeta, error) {
	if um := m.metas[c.ID]; um != nil {
		return um, nil
	}
	return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: no metadata", c.ID)
}

func (m *memList) ListPartials(context.Context) ([]TopEntry, string, error) {
	return m.parts, "/s/.int/partial", nil
}

func (m *memList) ReadPartial(_ context.Context, id string) (UnfinishedState, error) {
	if err := m.partErr[id]; err != nil {
		return UnfinishedState{}, err
	}
	return m.partials[id], nil
}

// mapTree lists the folder dir of a tree in a map: path -> size (a file), -1 (a folder) or -2
// (something else); skip is a folder the backend does not enter (another file system).
func mapTree(files map[string]int64, skip string, read map[string]int) func(dir string) ([]TreeEntry, error) {
	return func(dir string) ([]TreeEntry, error) {
		read[dir]++
		var out []TreeEntry
		for p, n := range files {
			rest, ok := strings.CutPrefix(p, dir+"/")
			if dir == "" {
				rest, ok = p, true
			}
			if !ok || strings.Contains(rest, "/") {
				continue
			}
			e := TreeEntry{Name: rest, Size: max(n, 0), File: n >= 0, Dir: n == -1}
			if p == skip {
				e.Skip = "another file system mounted there; not entered"
			}
			out = append(out, e)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	}
}

// TestTreeBytes: an unfinished folder upload's size is what the files of its tree hold, summed
// below every folder, never below one the backend does not enter, and nothing for what is neither
// a file nor a folder.
func TestTreeBytes(t *testing.T) {
	files := map[string]int64{"x": 3, "sub": -1, "sub/y": 4, "sub/deeper": -1, "sub/deeper/z": 5, "mnt": -1, "mnt/w": 1000, "odd": -2}
	read := map[string]int{}
	if n, _ := TreeBytes(false, mapTree(files, "mnt", read)); n != 12 {
		t.Errorf("TreeBytes = %d, want 12", n)
	}
	if want := map[string]int{"": 1, "sub": 1, "sub/deeper": 1}; !reflect.DeepEqual(read, want) {
		t.Errorf("folders read %v, want %v", read, want)
	}
	// A flat listing (S3's) gives every file at once: no folder is asked for.
	flat := func(dir string) ([]TreeEntry, error) {
		read[dir]++
		return []TreeEntry{{Name: "x", File: true, Size: 3}, {Name: "sub/y", File: true, Size: 4}}, nil
	}
	if n, _ := TreeBytes(true, flat); n != 7 || read[""] != 2 {
		t.Errorf("flat TreeBytes = %d after %d reads of the top, want 7 after 2", n, read[""])
	}
	// A folder that cannot be read holds nothing counted: the rest is summed.
	broken := func(dir string) ([]TreeEntry, error) {
		if dir == "sub" {
			return nil, errors.New("permission denied")
		}
		return mapTree(files, "mnt", map[string]int{})(dir)
	}
	if n, _ := TreeBytes(false, broken); n != 3 {
		t.Errorf("TreeBytes with sub unreadable = %d, want 3", n)
	}
}

// TestTreeWritten: an unfinished folder upload was last written when the newest file of its tree
// was (not a folder, nor a file below one the backend does not enter), or, when what else it
// holds (its data, its folder) says later, then.
func TestTreeWritten(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	tree := map[string][]TreeEntry{
		"":    {{Name: "x", File: true, Size: 1, At: at(1)}, {Name: "sub", Dir: true, At: at(9)}, {Name: "mnt", Dir: true, Skip: "another file system"}},
		"sub": {{Name: "y", File: true, Size: 2, At: at(3)}, {Name: "z", File: true, Size: 3, At: at(2)}},
		"mnt": {{Name: "w", File: true, Size: 100, At: at(8)}},
	}
	readDir := func(dir string) ([]TreeEntry, error) { return tree[dir], nil }
	n, newest := TreeBytes(false, readDir)
	if n != 6 || !newest.Equal(at(3)) {
		t.Fatalf("TreeBytes = %d, newest %v; want 6, %v (sub/y)", n, newest, at(3))
	}
	for _, tc := range []struct {
		name          string
		written, want time.Time
	}{
		{"its files written after its data", at(0), at(3)},
		{"its data written after its files", at(5), at(5)},
		{"nothing else known", time.Time{}, at(3)},
	} {
		u := UnfinishedState{Name: "logs", Bytes: 0, Written: tc.written}
		u.Tree(n, newest)
		if u.Bytes != 6 || !u.Written.Equal(tc.want) {
			t.Errorf("%s: %+v; want 6 bytes, written %v", tc.name, u, tc.want)
		}
	}
	// No file: written when what else it holds says.
	u := UnfinishedState{Written: at(4)}
	u.Tree(TreeBytes(false, func(string) ([]TreeEntry, error) { return nil, nil }))
	if u.Bytes != 0 || !u.Written.Equal(at(4)) {
		t.Errorf("an empty tree: %+v; want 0 bytes, written %v", u, at(4))
	}
}

// TestListOn: the listing's rules on a map backend. Each field of want fails when its rule is
// dropped: the top's kinds and their one wording, recognition, a partial beside its finished
// upload left out, a gone partial silent, a damaged one named, an unknown begin taken as the last
// write, and the order of entries and skips.
func TestListOn(t *testing.T) {
	const (
		a = "01900000-0000-7000-8000-00000000000a"
		b = "01900000-0000-7000-8000-00000000000b"
		c = "01900000-0000-7000-8000-00000000000c"
		d = "01900000-0000-7000-8000-00000000000d"
		e = "01900000-0000-7000-8000-00000000000e"
		f = "01900000-0000-7000-8000-00000000000f"
		g = "01900000-0000-7000-8000-000000000010"
	)
	sum := strings.Repeat("ab", 32)
	made := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	used := made.Add(time.Hour)
	m := &memList{
		top: []TopEntry{
			{Name: InternalDir, Dir: true}, {Name: "stray.txt"}, {Name: a, Dir: true}, {Name: b, Link: true},
			{Name: c}, {Name: d, Dir: true},
		},
		metas: map[string]*UploadMeta{
			a: {Info: &Info{Name: "a.txt", Size: 5, Blake3: sum, Made: made}, Recorded: a, LastUsed: used},
		},
		parts: []TopEntry{
			{Name: "junk", Dir: true}, {Name: a, Dir: true}, {Name: e, Dir: true}, {Name: f, Dir: true},
			{Name: g, Dir: true}, {Name: d, Link: true},
		},
		partials: map[string]UnfinishedState{
			a: {Name: "leftover"},
			e: {Name: "proj", Bytes: 12, Made: made, Written: used, Busy: true},
			f: {Name: "batch", Batch: true, Bytes: 7, Written: used},
		},
		partErr: map[string]error{g: fault.Errorf(fault.UploadMissing, "upload %s: gone", g)},
	}
	l, err := ListOn(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries := []Entry{
		{ID: a, Name: "a.txt", Size: 5, Finished: true, Made: made, LastUsed: used, Blake3: sum},
		{ID: e, Name: "proj", Size: 12, Made: made, LastUsed: used, Busy: true},
		{ID: f, Name: "batch", Size: 7, Made: used, LastUsed: used, Batch: true},
	}
	if !reflect.DeepEqual(l.Entries, wantEntries) {
		t.Errorf("entries\n%+v\nwant\n%+v", l.Entries, wantEntries)
	}
	wantSkips := []Skip{
		{Path: "/s/.int/partial/" + d, Why: SkipNotUnfinished},
		{Path: "/s/.int/partial/junk", Why: SkipNotUnfinished},
		{Path: "/s/" + b, Why: SkipLink},
		{Path: "/s/" + c, Why: SkipNotFolder},
		{Path: "/s/" + d, Why: "not an upload of this store: upload " + d + ": no metadata"},
		{Path: "/s/stray.txt", Why: SkipNotID},
	}
	if !reflect.DeepEqual(l.Skipped, wantSkips) {
		t.Errorf("skipped\n%+v\nwant\n%+v", l.Skipped, wantSkips)
	}
	if want := []Leftover{{ID: a, Partial: true}}; !reflect.DeepEqual(l.Leftovers, want) {
		t.Errorf("leftovers %+v, want %+v: the partial beside its finished upload", l.Leftovers, want)
	}

	// A partial that cannot be read is named, not listed, and does not stop the listing.
	m.partErr[g] = errors.New("data is not a regular file")
	if l, err = ListOn(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	var named bool
	for _, sk := range l.Skipped {
		named = named || sk == Skip{Path: "/s/.int/partial/" + g, Why: "unfinished upload: data is not a regular file"}
	}
	if !named || len(l.Entries) != 3 {
		t.Errorf("a damaged partial: skipped %+v, %d entries", l.Skipped, len(l.Entries))
	}

	// A partial gone since it was listed may say so as upload.missing, as a finished upload's
	// read does: neither listed nor named, and the listing goes on.
	m.partErr[g] = fault.Errorf(fault.UploadMissing, "upload %s: no such upload", g)
	if l, err = ListOn(context.Background(), m); err != nil || !reflect.DeepEqual(l.Entries, wantEntries) || !reflect.DeepEqual(l.Skipped, wantSkips) {
		t.Errorf("a partial gone as upload.missing: %+v, %v", l, err)
	}

	// A store that is not there is empty.
	if l, err := ListOn(context.Background(), &memList{missing: true, top: m.top}); err != nil || len(l.Entries)+len(l.Skipped) != 0 {
		t.Errorf("no store: %+v, %v", l, err)
	}
}

// TestListOnMarkers: a backend that writes a folder's path with a trailing slash (S3's prefix)
// has its folders' skips so written, and its files' not; a marker the store did not write beside
// an upload is named; a marker with no upload is what the backend reads it as (no upload: named
// as any other, with the backend's reason); a sweep's tombstone with no upload is neither named nor listed, but left for a sweep to remove;
// a partial that fails for want of an answer stops the listing rather than be named.
func TestListOnMarkers(t *testing.T) {
	const (
		a = "01900000-0000-7000-8000-00000000000a"
		b = "01900000-0000-7000-8000-00000000000b"
		c = "01900000-0000-7000-8000-00000000000c"
		d = "01900000-0000-7000-8000-00000000000d"
	)
	sum := strings.Repeat("ab", 32)
	made := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &memList{
		slash: true,
		top:   []TopEntry{{Name: a, Dir: true}, {Name: b, Dir: true}, {Name: d, Dir: true}, {Name: "junk", Dir: true}, {Name: "x.txt"}},
		metas: map[string]*UploadMeta{
			a: {Info: &Info{Name: "a.txt", Size: 5, Blake3: sum, Made: made}, NoID: true, LastUsed: made, ForeignMarker: true},
			d: {Tombstone: true},
		},
		parts:    []TopEntry{{Name: c, Dir: true}},
		partials: map[string]UnfinishedState{c: {Name: "c.bin", Written: made}},
	}
	l, err := ListOn(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries := []Entry{
		{ID: a, Name: "a.txt", Size: 5, Finished: true, Made: made, LastUsed: made, Blake3: sum},
		{ID: c, Name: "c.bin", Made: made, LastUsed: made},
	}
	if !reflect.DeepEqual(l.Entries, wantEntries) {
		t.Errorf("entries\n%+v\nwant\n%+v", l.Entries, wantEntries)
	}
	wantSkips := []Skip{
		{Path: "/s/" + a + "/.used", Why: SkipForeignMarker},
		{Path: "/s/" + b + "/", Why: "not an upload of this store: upload " + b + ": no metadata"},
		{Path: "/s/junk/", Why: SkipNotID},
		{Path: "/s/x.txt", Why: SkipNotID},
	}
	if !reflect.DeepEqual(l.Skipped, wantSkips) {
		t.Errorf("skipped\n%+v\nwant\n%+v", l.Skipped, wantSkips)
	}
	if want := []Leftover{{ID: d}}; !reflect.DeepEqual(l.Leftovers, want) {
		t.Errorf("leftovers %+v, want %+v: the tombstone alone", l.Leftovers, want)
	}
	m.partErr = map[string]error{c: fault.Errorf(fault.StoreUnreachable, "store s: no answer")}
	if _, err := ListOn(context.Background(), m); fault.CodeOf(err) != fault.StoreUnreachable {
		t.Errorf("a partial read from a store that does not answer: %v, want store.unreachable", err)
	}
}

// statusRace is a StatusBackend whose upload is finished by another process between Status's
// look at the finished uploads and its look at the unfinished ones.
type statusRace struct {
	infos int
	info  *Info // what the second look finds
}

func (r *statusRace) Info(_ context.Context, id string) (*Info, error) {
	if r.infos++; r.infos == 1 || r.info == nil {
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: not finished", id)
	}
	return r.info, nil
}

func (r *statusRace) PartialStatus(_ context.Context, id string) (UnfinishedState, int64, error) {
	return UnfinishedState{}, 0, fault.Errorf(fault.UploadMissing, "upload %s: no such upload", id)
}

// TestStatusOfFinishedMeanwhile: an upload a finish publishes between Status's two looks is
// reported finished, not missing (the S3 store's Status said upload.missing then); one that is
// neither is upload.missing with the backend's message.
func TestStatusOfFinishedMeanwhile(t *testing.T) {
	const id = "0190c4d2-0000-7000-8000-000000000001"
	ctx := context.Background()
	st, err := StatusOf(ctx, &statusRace{info: &Info{ID: id, Name: "a.bin", Size: 3}}, id)
	if err != nil || !st.Finished || st.Offset != 3 || st.Size != 3 || st.Name != "a.bin" {
		t.Fatalf("finished meanwhile: %+v, %v", st, err)
	}
	_, err = StatusOf(ctx, &statusRace{}, id)
	if fault.CodeOf(err) != fault.UploadMissing || !strings.Contains(err.Error(), "no such upload") {
		t.Fatalf("no such upload: %v", err)
	}
	if _, err := StatusOf(ctx, &statusRace{}, "nope"); fault.CodeOf(err) != fault.UploadInvalid {
		t.Fatalf("a bad id: %v", err)
	}
}
