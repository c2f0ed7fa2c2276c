package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

func TestReadUnfinished(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	obj := func(name string, size, s int64) FolderObject { return FolderObject{Name: name, Size: size, At: at(s)} }
	info := func(of PartialOf) *PartialInfo { return &PartialInfo{PartialOf: of, Size: 100, Made: at(50)} }
	file, stream, folder := PartialOf{Name: "a.bin"}, PartialOf{Name: "s.bin", Streamed: true}, PartialOf{Name: "d", Folder: true}
	chunks := []FolderObject{obj("info", 80, 50), obj("c/00000000000000000010", 5, 70), obj("c/00000000000000000000", 10, 60)}
	files := []FolderObject{obj("d/x", 3, 40), obj("d/y/z", 4, 90), obj(MetaName, 200, 95), obj("e/w", 1000, 99)}
	for _, tc := range []struct {
		name string
		o    UnfinishedObjects
		want Unfinished
		code fault.Code // the error's, when it fails
	}{
		{"nothing", UnfinishedObjects{}, Unfinished{}, ""},
		{"info only", UnfinishedObjects{Info: info(file), Partial: chunks[:1]},
			Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "a.bin", Made: at(50), Written: at(50)}}, ""},
		{"info and chunks", UnfinishedObjects{Info: info(file), Partial: chunks},
			Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "a.bin", Made: at(50), Bytes: 15, Written: at(70)}}, ""},
		{"info and chunks written before it", UnfinishedObjects{Info: &PartialInfo{PartialOf: file, Size: -1, Made: at(80)}, Partial: chunks},
			Unfinished{Holds: UnfinishedInfo, Size: -1, State: UnfinishedState{Name: "a.bin", Made: at(80), Bytes: 15, Written: at(80)}}, ""},
		{"info and chunks with a gap", UnfinishedObjects{Info: info(file), Partial: chunks[:2]}, Unfinished{}, fault.UploadUnreadable},
		{"info, others' objects beside its chunks", UnfinishedObjects{Info: info(file), Partial: append([]FolderObject{obj("c/x", 7, 99), obj("c/-3", 3, 99), obj("x/5", 1, 99)}, chunks...)},
			Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "a.bin", Made: at(50), Bytes: 15, Written: at(70)}}, ""},
		{"a stream's parts", UnfinishedObjects{Info: info(stream), Partial: chunks, Parts: []FolderObject{obj("", 7, 60), obj("", 8, 75)}},
			Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "s.bin", Made: at(50), Bytes: 15, Written: at(75)}}, ""},
		{"a stream whose multipart upload is gone", UnfinishedObjects{Info: info(stream), PartsGone: true}, Unfinished{}, ""},
		{"a folder upload's files", UnfinishedObjects{Info: info(folder), Folder: files, Partial: chunks},
			Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "d", Made: at(50), Bytes: 7, Written: at(99)}}, ""},
		{"a folder upload with none", UnfinishedObjects{Info: info(folder)},
			Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "d", Made: at(50), Written: at(50)}}, ""},
		{"folder files only", UnfinishedObjects{Folder: files, Partial: chunks[:2], Multiparts: []FolderObject{obj("m.bin", 0, 30)}},
			Unfinished{Holds: UnfinishedLeftover, State: UnfinishedState{Name: "d", Made: at(40), Bytes: 7, Written: at(99)}}, ""},
		{"a finished folder upload's objects", UnfinishedObjects{Folder: append(files, obj(TreeListName, 9, 99))}, Unfinished{}, ""},
		{"chunks only, with a gap", UnfinishedObjects{Partial: chunks[:2], Multiparts: []FolderObject{obj("m.bin", 0, 30)}},
			Unfinished{Holds: UnfinishedChunks, State: UnfinishedState{Bytes: 5, Written: at(70)}}, ""},
		{"multipart only", UnfinishedObjects{Multiparts: []FolderObject{obj("m.bin", 0, 30), obj("n.bin", 0, 40)}},
			Unfinished{Holds: UnfinishedMultipart, State: UnfinishedState{Name: "m.bin", Written: at(30)}}, ""},
		{"a stream gone, its chunks' partial beside", UnfinishedObjects{Info: info(stream), PartsGone: true, Partial: chunks},
			Unfinished{Holds: UnfinishedChunks, State: UnfinishedState{Bytes: 15, Written: at(70)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadUnfinished("u1", tc.o)
			if c := fault.CodeOf(err); c != tc.code || got != tc.want {
				t.Fatalf("%+v, %v; want %+v, code %q", got, err, tc.want, tc.code)
			}
		})
	}
}

func TestChunkRun(t *testing.T) {
	c := func(name string, size int64) FolderObject { return FolderObject{Name: name, Size: size} }
	for _, tc := range []struct {
		name string
		objs []FolderObject
		offs []int64
		end  int64
		bad  bool
	}{
		{"none", []FolderObject{c("info", 9)}, nil, 0, false},
		{"in order once sorted", []FolderObject{c("c/30", 1), c("c/0", 10), c("info", 9), c("c/10", 20)}, []int64{0, 10, 30}, 31, false},
		{"not from 0", []FolderObject{c("c/10", 5)}, nil, 0, true},
		{"a gap", []FolderObject{c("c/0", 10), c("c/11", 5)}, nil, 0, true},
		{"an overlap", []FolderObject{c("c/0", 10), c("c/5", 5)}, nil, 0, true},
		{"no offset, negative, deeper: no chunk", []FolderObject{c("c/0", 4), c("c/x", 1), c("c/-4", 4), c("d/4", 1)}, []int64{0}, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, end, err := ChunkRun("u1", tc.objs)
			if (err != nil) != tc.bad || tc.bad && fault.CodeOf(err) != fault.UploadUnreadable {
				t.Fatalf("error %v, want one: %v", err, tc.bad)
			}
			var offs []int64
			for _, c := range cs {
				offs = append(offs, c.Off)
			}
			if len(offs) != len(tc.offs) || end != tc.end {
				t.Fatalf("chunks at %v ending at %d, want %v, %d", offs, end, tc.offs, tc.end)
			}
			for i := range offs {
				if offs[i] != tc.offs[i] {
					t.Fatalf("chunks at %v, want %v", offs, tc.offs)
				}
			}
		})
	}
}

func TestMultipartOf(t *testing.T) {
	const id = "01890a5d-ac96-774b-bcce-b302099a8057"
	for _, tc := range []struct {
		rel, id, name string
		ok            bool
	}{
		{id + "/a.bin", id, "a.bin", true},
		{id + "/d/sub/x.bin", id, "d", true}, // a large file of the folder upload d
		{id + "/d/x.bin", id, "d", true},
		{id + "/d/../x.bin", id, "d/../x.bin", false}, // no path of a folder upload's file
		{"not-an-id/a.bin", "not-an-id", "a.bin", false},
		{id, id, "", false},
	} {
		id, name, ok := MultipartOf(tc.rel)
		if id != tc.id || name != tc.name || ok != tc.ok {
			t.Errorf("MultipartOf(%q) = %q, %q, %v; want %q, %q, %v", tc.rel, id, name, ok, tc.id, tc.name, tc.ok)
		}
	}
}

func TestUnfinishedTop(t *testing.T) {
	id := func(n int) string { return fmt.Sprintf("01890a5d-ac96-774b-bcce-b302099a805%d", n) }
	unfinished := []FolderObject{{Name: "d/x"}, {Name: MetaName}}
	finished := []FolderObject{{Name: "d/x"}, {Name: MetaName}, {Name: TreeListName}}
	got := UnfinishedTop(
		[]TopEntry{{Name: id(5), Dir: true}, {Name: id(1)}, {Name: id(1), Dir: true}, {Name: id(6)}},
		map[string][]FolderObject{
			id(2):       unfinished, // a kill's: listed
			id(3):       finished,
			id(4):       {{Name: "a.png"}},
			"not-an-id": unfinished,
			id(5):       unfinished, // listed once, with its partial
		},
		[]string{id(7), id(5), id(6)}, // id(6): a partial object, not a folder, and a multipart upload
	)
	want := []TopEntry{{Name: id(1)}, {Name: id(1), Dir: true}, {Name: id(2), Dir: true}, {Name: id(5), Dir: true}, {Name: id(6)}, {Name: id(6), Dir: true}, {Name: id(7), Dir: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("%+v,\nwant %+v", got, want)
	}
}

// ReadUnfinishedNow reads an info only where the listing showed one, reads one gone since as
// none, and a stream whose multipart upload went as one with no info; other errors stop it, and
// nothing left is upload.missing.
func TestReadUnfinishedNow(t *testing.T) {
	ctx := context.Background()
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	chunk := FolderObject{Name: "c/00000000000000000000", Size: 10, At: at(60)}
	withInfo := []FolderObject{{Name: "info", Size: 80, At: at(50)}, chunk}
	missing, broken := NotUnfinished("x", "test"), fault.Errorf(fault.UploadUnreadable, "broken")
	stream := &PartialInfo{PartialOf: PartialOf{Name: "s.bin", Streamed: true}, Size: 100, Made: at(50)}
	part := []FolderObject{{Size: 7, At: at(70)}}
	for _, tc := range []struct {
		name     string
		partial  []FolderObject
		info     *PartialInfo
		infoErr  error
		partsErr error
		reads    int // of the info and the parts
		want     Unfinished
		code     fault.Code
	}{
		{name: "nothing listed", info: stream, code: fault.UploadMissing},
		{name: "an info gone, nothing else", partial: withInfo[:1], infoErr: missing, reads: 1, code: fault.UploadMissing},
		{name: "no info listed", partial: []FolderObject{chunk}, info: stream,
			want: Unfinished{Holds: UnfinishedChunks, State: UnfinishedState{Bytes: 10, Written: at(60)}}},
		{name: "info gone since the listing", partial: withInfo, infoErr: missing, reads: 1,
			want: Unfinished{Holds: UnfinishedChunks, State: UnfinishedState{Bytes: 10, Written: at(60)}}},
		{name: "info unreadable", partial: withInfo, infoErr: broken, reads: 1, code: fault.UploadUnreadable},
		{name: "a stream's parts", partial: withInfo, info: stream, reads: 2,
			want: Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "s.bin", Made: at(50), Bytes: 7, Written: at(70)}}},
		{name: "a stream's multipart upload gone", partial: withInfo, info: stream, partsErr: missing, reads: 2,
			want: Unfinished{Holds: UnfinishedChunks, State: UnfinishedState{Bytes: 10, Written: at(60)}}},
		{name: "parts unreadable", partial: withInfo, info: stream, partsErr: broken, reads: 2, code: fault.UploadUnreadable},
		{name: "not a stream's: its parts not counted", partial: withInfo, reads: 2,
			info: &PartialInfo{PartialOf: PartialOf{Name: "a.bin"}, Size: 100, Made: at(50)},
			want: Unfinished{Holds: UnfinishedInfo, Size: 100, State: UnfinishedState{Name: "a.bin", Made: at(50), Bytes: 10, Written: at(60)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			got, err := ReadUnfinishedNow(ctx, "x", "test", UnfinishedObjects{Partial: tc.partial}, func(context.Context) (*PartialInfo, error) {
				reads++
				return tc.info, tc.infoErr
			}, func(context.Context) ([]FolderObject, error) {
				reads++
				return part, tc.partsErr
			})
			if fault.CodeOf(err) != tc.code || got != tc.want || reads != tc.reads {
				t.Fatalf("got %+v, %v after %d reads; want %+v, code %q after %d", got, err, reads, tc.want, tc.code, tc.reads)
			}
		})
	}
}
