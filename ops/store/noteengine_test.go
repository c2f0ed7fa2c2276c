package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// fakeNotes is a NoteBackend in memory: notes with a version each write changes, infos, finished
// uploads, and what the rules did to them.
type fakeNotes struct {
	MapObjects // the notes
	mu         sync.Mutex
	finished   map[string]*Info
	dropped    []string // partials dropped
	tidied     []string
	heads      int
	// beforePut, when set, runs before a note is written: another run's write racing this one.
	beforePut func(key string)
	// gone: the unfinished write of these ids went away (held is upload.missing).
	gone map[string]bool
}

type fakePartial struct{ O PartialOf }

func (p *fakePartial) Of() PartialOf { return p.O }

func newFakeNotes() *fakeNotes {
	return &fakeNotes{finished: map[string]*Info{}, gone: map[string]bool{}}
}

// Put is the notes' Objects.Put, after the hook of a racing run before a note's.
func (f *fakeNotes) Put(ctx context.Context, key, version string, body []byte) (string, error) {
	if f.beforePut != nil && strings.HasPrefix(key, noteKey("")) {
		hook := f.beforePut
		f.beforePut = nil
		hook(key)
	}
	return f.MapObjects.Put(ctx, key, version, body)
}

// has tells whether the note at key is there.
func (f *fakeNotes) has(key string) bool {
	_, err := f.Get(context.Background(), key)
	return err == nil
}

// info is the info of the upload id, nil when it has none.
func (f *fakeNotes) info(id string) *fakePartial {
	p, _ := ReadInfo[*fakePartial](context.Background(), f, id, "")
	return p
}

// setInfo writes the info of the upload id, over whatever is there.
func (f *fakeNotes) setInfo(t *testing.T, id string, p *fakePartial) {
	t.Helper()
	if err := WriteInfo(context.Background(), f, id, p, AnyVersion); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeNotes) DropPartial(_ context.Context, id string, _ *fakePartial) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.MapObjects.Delete(context.Background(), infoKey(id), "")
	f.dropped = append(f.dropped, id)
}

func (f *fakeNotes) HeadFinished(_ context.Context, id, name string) (*Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heads++
	if i := f.finished[id]; i != nil && i.Name == name {
		return i, nil
	}
	return nil, NotFinished(id, "fake")
}

func (f *fakeNotes) TidyFinished(_ context.Context, id string, _ *fakePartial) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.MapObjects.Delete(context.Background(), infoKey(id), "")
	f.tidied = append(f.tidied, id)
}

// put writes the note at key naming id, as another run does.
func (f *fakeNotes) put(t *testing.T, key, id string) {
	t.Helper()
	o, _ := f.Get(context.Background(), key)
	if _, err := f.Put(context.Background(), key, o.Version, []byte(`{"id":"`+id+`"}`)); err != nil {
		t.Fatal(err)
	}
}

// noteRig is the rules over a fakeNotes, admitting against limits that reserve every upload, so
// that a reservation left behind shows.
func noteRig() (*fakeNotes, Notes[*fakePartial], *memReserver) {
	f := newFakeNotes()
	r := &memReserver{rs: map[string][]byte{}}
	q := &Quota{R: r, Loc: "fake", List: func(context.Context) (*Listing, error) { return &Listing{}, nil },
		M: fixedMark(MarkText(Limits{MaxFiles: 100}))}
	return f, Notes[*fakePartial]{B: f, O: f, Quota: q}, r
}

const (
	noteSum  = "0000000000000000000000000000000000000000000000000000000000000001"
	otherSum = "0000000000000000000000000000000000000000000000000000000000000002"
)

func streamOf(name, sum string) func(string) (*fakePartial, error) {
	return func(string) (*fakePartial, error) {
		return &fakePartial{PartialOf{Name: name, Blake3: sum, Streamed: true}}, nil
	}
}

func newTestID(t *testing.T) string {
	t.Helper()
	id, err := NewID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Two runs of one source start at once: the one whose create-only write of the note is refused
// drops what it began (its info, its reservation) and takes the winner's upload up, one upload
// for the source.
func TestNotesStartRaceTakesWinners(t *testing.T) {
	f, n, r := noteRig()
	ctx := context.Background()
	st := StreamStart{Src: Source{Path: "/a/x.bin", Name: "x.bin", Size: 10, Blake3: noteSum}}
	key := n.Key("x.bin", 10, noteSum)
	winner := newTestID(t)
	f.beforePut = func(string) {
		WriteInfo(ctx, f, winner, &fakePartial{PartialOf{Name: "x.bin", Blake3: noteSum, Streamed: true}}, "")
		f.put(t, key, winner)
	}
	var asked []string
	id, p, err := n.FindStream(ctx, st, streamOf("x.bin", noteSum), func(id string, _ *fakePartial) error {
		asked = append(asked, id)
		return nil
	})
	if err != nil || id != winner || p == nil {
		t.Fatalf("found %s (%v, %v); want the winner's unfinished upload %s", id, p, err, winner)
	}
	if len(f.dropped) != 1 || f.dropped[0] == winner || len(asked) != 1 || asked[0] != winner {
		t.Errorf("dropped %v, asked what %v hold; want the loser's own upload dropped and the winner's resumed", f.dropped, asked)
	}
	if len(r.rs) != 0 {
		t.Errorf("reservations left: %v; want the loser's released", r.rs)
	}
	if got, _ := n.Read(ctx, key); got != winner {
		t.Errorf("the note names %q; want the winner %s", got, winner)
	}
}

// A stream takes up only the unfinished upload of its own bytes: one the note names for another
// BLAKE3 or name, or a folder's, or a step-by-step one, gives way to a new upload, which writes
// the note over the dead one's version.
func TestNotesFindStreamOnlyItsOwn(t *testing.T) {
	for _, of := range []PartialOf{
		{Name: "x.bin", Blake3: otherSum, Streamed: true},
		{Name: "y.bin", Blake3: noteSum, Streamed: true},
		{Name: "x.bin", Blake3: noteSum, Folder: true},
		{Name: "x.bin"},
	} {
		f, n, _ := noteRig()
		ctx := context.Background()
		key := n.Key("x.bin", 10, noteSum)
		old := newTestID(t)
		f.setInfo(t, old, &fakePartial{of})
		f.put(t, key, old)
		st := StreamStart{Src: Source{Name: "x.bin", Size: 10, Blake3: noteSum}}
		id, p, err := n.FindStream(ctx, st, streamOf("x.bin", noteSum), func(string, *fakePartial) error { return nil })
		if err != nil || id == old || p == nil || *f.info(id) != *p {
			t.Errorf("%+v: found %s (%v, %v); want a new upload", of, id, p, err)
		}
		if got, _ := n.Read(ctx, key); got != id {
			t.Errorf("%+v: the note names %q; want the new upload %s", of, got, id)
		}
	}
}

// An unfinished upload whose write went away is the finished one when another run finished it
// with these bytes; else (a sweep dropped it) a new upload begins at once, the finished upload
// asked for once and not waited for, as no other run is known to be at work.
func TestNotesFindStreamWriteGone(t *testing.T) {
	for _, finished := range []bool{true, false} {
		f, n, _ := noteRig()
		ctx := context.Background()
		key := n.Key("x.bin", 10, noteSum)
		old := newTestID(t)
		f.setInfo(t, old, &fakePartial{PartialOf{Name: "x.bin", Blake3: noteSum, Streamed: true}})
		f.put(t, key, old)
		if finished {
			f.finished[old] = &Info{ID: old, Name: "x.bin", Size: 10, Blake3: noteSum}
		}
		st := StreamStart{Src: Source{Name: "x.bin", Size: 10, Blake3: noteSum}}
		id, p, err := n.FindStream(ctx, st, streamOf("x.bin", noteSum), func(id string, _ *fakePartial) error {
			return fault.Errorf(fault.UploadMissing, "upload %s: its write is gone", id)
		})
		switch {
		case err != nil:
			t.Fatal(err)
		case finished && (id != old || p != nil || len(f.tidied) != 1):
			t.Errorf("finished by another run: found %s (%v), tidied %v; want %s finished, tidied", id, p, f.tidied, old)
		case !finished && (id == old || p == nil || f.heads != 1):
			t.Errorf("dropped: found %s (%v) after %d looks at %s; want a new upload after one", id, p, f.heads, old)
		}
	}
}

// A finished upload the note names is named again (no info), unless it is the one to avoid; a
// folder's note takes up only a folder upload of the same name and BLAKE3.
func TestNotesFindTree(t *testing.T) {
	f, n, _ := noteRig()
	ctx := context.Background()
	st := TreeStart{Src: &TreeSource{Path: "/a/d", Name: "d"}, Size: 10, Blake3: noteSum}
	key := n.Key("d/", 10, noteSum)
	done := newTestID(t)
	f.put(t, key, done)
	folder := func(string) (*fakePartial, error) {
		return &fakePartial{PartialOf{Name: "d", Blake3: noteSum, Folder: true}}, nil
	}
	if id, p, err := n.FindTree(ctx, key, st, folder); err != nil || id != done || p != nil {
		t.Fatalf("found %s (%v, %v); want the finished %s", id, p, err, done)
	}
	st.Avoid = done
	id, p, err := n.FindTree(ctx, key, st, folder)
	if err != nil || id == done || p == nil {
		t.Fatalf("avoiding %s: found %s (%v, %v); want a new upload", done, id, p, err)
	}
	st.Avoid = ""
	if again, q, err := n.FindTree(ctx, key, st, folder); err != nil || again != id || q == nil || *q != *p {
		t.Errorf("found %s (%v, %v); want the unfinished %s resumed", again, q, err, id)
	}
	f.setInfo(t, id, &fakePartial{PartialOf{Name: "d", Blake3: otherSum, Folder: true}})
	if other, _, err := n.FindTree(ctx, key, st, folder); err != nil || other == id {
		t.Errorf("a folder upload of other bytes: found %s (%v); want a new upload", other, err)
	}
}

// Before it publishes, a run that finds the note naming another upload (two create-only writes
// that both succeeded) drops its own and starts over, unless it lost three times already.
func TestNotesLost(t *testing.T) {
	f, n, _ := noteRig()
	ctx := context.Background()
	key := n.Key("x.bin", 10, noteSum)
	mine, other := newTestID(t), newTestID(t)
	f.put(t, key, mine)
	if n.Lost(ctx, key, mine, nil, 0) || len(f.dropped) != 0 {
		t.Fatalf("the note names this run's upload: lost, dropped %v", f.dropped)
	}
	f.put(t, key, other)
	if n.Lost(ctx, key, mine, nil, 3) || len(f.dropped) != 0 {
		t.Fatalf("lost three times already: lost again, dropped %v", f.dropped)
	}
	if !n.Lost(ctx, key, mine, nil, 0) || len(f.dropped) != 1 || f.dropped[0] != mine {
		t.Fatalf("the note names another upload: dropped %v; want lost, this run's dropped", f.dropped)
	}
}

// A note goes with its upload only while it names it: one another run wrote since stays.
func TestNotesDropOnlyItsOwn(t *testing.T) {
	f, n, _ := noteRig()
	ctx := context.Background()
	hex := SourceKey("x.bin", 10, noteSum)
	key := noteKey(hex)
	mine, other := newTestID(t), newTestID(t)
	f.put(t, key, other)
	n.Drop(ctx, hex, mine)
	n.Drop(ctx, strings.ToUpper(hex), other) // not a note's name
	if got, _ := n.Read(ctx, key); got != other {
		t.Fatalf("the note names %q; want %s kept", got, other)
	}
	n.Drop(ctx, hex, other)
	if f.has(key) {
		t.Fatalf("the note naming %s is still there after its drop", other)
	}
}

// An upload finished by another run is this run's only with these bytes; its finish may be under
// way, and is waited for only when asked.
func TestNotesFinishedByOther(t *testing.T) {
	f, n, _ := noteRig()
	ctx := context.Background()
	id := newTestID(t)
	p := &fakePartial{}
	if _, err := n.FinishedByOther(ctx, "/a/x.bin", id, "x.bin", noteSum, p, false); fault.CodeOf(err) != fault.UploadMissing || f.heads != 1 {
		t.Fatalf("not there, not waited: %v after %d looks; want upload.missing after one", err, f.heads)
	}
	f.finished[id] = &Info{ID: id, Name: "x.bin", Size: 10, Blake3: otherSum}
	if _, err := n.FinishedByOther(ctx, "/a/x.bin", id, "x.bin", noteSum, p, true); fault.CodeOf(err) != fault.UploadHashMismatch || len(f.tidied) != 0 {
		t.Fatalf("finished with other bytes: %v, tidied %v; want upload.hashMismatch, nothing tidied", err, f.tidied)
	}
	delete(f.finished, id)
	f.heads = 0
	go func() {
		for {
			f.mu.Lock()
			if f.heads >= 2 {
				f.finished[id] = &Info{ID: id, Name: "x.bin", Size: 10, Blake3: noteSum}
				f.mu.Unlock()
				return
			}
			f.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	info, err := n.FinishedByOther(ctx, "/a/x.bin", id, "x.bin", noteSum, p, true)
	if err != nil || info.ID != id || info.Size != 10 || len(f.tidied) != 1 {
		t.Fatalf("finished while waited for: %+v, %v, tidied %v; want it, tidied", info, err, f.tidied)
	}
}

// fakeWrite is a NoteWrite whose send and completion say what the test wants.
type fakeWrite struct {
	held      int64
	sendErr   error
	taken     bool
	completed int
}

func (w *fakeWrite) Held() int64 { return w.held }
func (w *fakeWrite) Restart()    { w.held = 0 }
func (w *fakeWrite) Send(context.Context, SourceFile, int64, StreamPass) error {
	return w.sendErr
}
func (w *fakeWrite) Complete(context.Context) (bool, error) { w.completed++; return w.taken, nil }

// A stream under its note: what the backend holds of the upload resumed is told; a write gone
// under it, or a completion another run made first, is this run's upload when it is these bytes;
// a run that finds the note naming another upload before it publishes starts over; a refused one
// drops the note only while it names its upload.
func TestNotesStream(t *testing.T) {
	f, n, _ := noteRig()
	ctx := context.Background()
	src := Source{Path: "/a/x.bin", Name: "x.bin", Size: 10, Blake3: noteSum}
	key := n.Key(src.Name, src.Size, src.Blake3)
	fw := &fakeWrite{held: 7, taken: true}
	var resumed []bool
	open := func(_ string, _ *fakePartial, r bool) (NoteWrite, error) {
		resumed = append(resumed, r)
		return fw, nil
	}
	start := func() StreamWrite {
		t.Helper()
		found, w, err := n.StartStream(ctx, StreamStart{Src: src}, streamOf(src.Name, src.Blake3), open)
		if err != nil || found.ID != "" || w == nil {
			t.Fatalf("StartStream: %+v, %v, %v; want a write", found, w, err)
		}
		return w
	}
	w := start()
	if st, _ := w.Stored(); st.Held != 7 || len(resumed) != 1 || resumed[0] {
		t.Fatalf("a new upload: held %d, opened %v; want opened new", st.Held, resumed)
	}
	if again := start(); again.ID() != w.ID() || resumed[1] != true {
		t.Fatalf("run again: upload %s, opened %v; want %s resumed", again.ID(), resumed, w.ID())
	}
	f.finished[w.ID()] = &Info{ID: w.ID(), Name: src.Name, Size: 10, Blake3: noteSum}
	fw.sendErr = ErrWriteGone
	if info, err := w.Write(ctx, nil, 0, StreamPass{}); err != nil || info == nil || info.ID != w.ID() {
		t.Fatalf("write gone, finished by another run: %+v, %v; want it named", info, err)
	}
	fw.taken = false
	if info, err := w.Publish(ctx, noteSum); err != nil || info.ID != w.ID() || len(f.tidied) != 2 {
		t.Fatalf("completed by another run: %+v, %v, tidied %v; want it named, tidied", info, err, f.tidied)
	}
	other := newTestID(t)
	f.put(t, key, other)
	if _, err := w.Publish(ctx, noteSum); err != ErrStreamLost || fw.completed != 1 {
		t.Fatalf("the note names %s: %v after %d completions; want ErrStreamLost before one", other, err, fw.completed)
	}
	w.Refuse(ctx, otherSum)
	if got, _ := n.Read(ctx, key); got != other {
		t.Fatalf("refused: the note names %q; want %s's kept", got, other)
	}
	f.put(t, key, w.ID())
	w.Refuse(ctx, otherSum)
	if f.has(key) {
		t.Fatalf("refused: the note naming the upload refused is still there")
	}
}

// Publish writes the upload only while the note names it, and only once written does the
// upload stop being reserved and lose its info; a write that fails leaves both for a run again.
func TestNotesPublish(t *testing.T) {
	f, n, r := noteRig()
	ctx := context.Background()
	key := n.Key("x.bin", 10, noteSum)
	lost := fault.Errorf(fault.UploadInvalid, "lost")
	id, _, err := n.Quota.AdmitNew(ctx, "x.bin", 10)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePartial{PartialOf{Name: "x.bin", Blake3: noteSum, Streamed: true}}
	f.setInfo(t, id, p)
	f.put(t, key, id)
	failed := fault.Errorf(fault.UploadUnreadable, "refused")
	if err := n.Publish(ctx, key, id, p, 0, lost, func(context.Context) error { return failed }); err != failed || f.info(id) == nil || len(r.rs) != 1 {
		t.Fatalf("write failed: %v, info %v, reservations %d; want the error, info and reservation kept", err, f.info(id), len(r.rs))
	}
	writes := 0
	write := func(context.Context) error {
		if f.info(id) == nil || len(r.rs) != 1 {
			t.Errorf("while written: info %v, reservations %d; want both kept until it is written", f.info(id), len(r.rs))
		}
		writes++
		return nil
	}
	if err := n.Publish(ctx, key, id, p, 0, lost, write); err != nil || writes != 1 || f.info(id) != nil || len(r.rs) != 0 || !f.has(key) {
		t.Fatalf("published: %v after %d writes, info %v, reservations %d; want written once, info and reservation gone, note kept",
			err, writes, f.info(id), len(r.rs))
	}
	other := newTestID(t)
	f.setInfo(t, id, p)
	f.put(t, key, other)
	if err := n.Publish(ctx, key, id, p, 0, lost, write); err != lost || writes != 1 {
		t.Fatalf("the note names %s: %v after %d writes; want lost before a write", other, err, writes)
	}
}
