package store

import (
	"context"
	"errors"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// mapFolders is the smallest SweepFolders: each folder a set of names. It tests the listing and
// the sweep of a store kept as folders apart from the local store's descriptors.
type mapFolders struct {
	mu        sync.Mutex // Remove runs on several goroutines
	there     bool
	dirs      [3]map[string]bool         // by SweptFolder: the names it holds
	links     map[string]bool            // names of the store's folder a link replaced
	used      map[string]time.Time       // finished uploads' last use
	parts     map[string]UnfinishedState // unfinished uploads' state
	metaErr   map[string]error           // ReadMeta fails
	removeErr map[string]error           // Remove from the trash fails
	otherFS   bool                       // the trash is on another file system
	trashOpen bool
	locked    bool // the one-sweep lock is held
	writers   int  // writers' locks ReadPartial holds
	excluded  int  // holds of the lock against uses
	pruned    int
}

func newMapFolders() *mapFolders {
	return &mapFolders{there: true, dirs: [3]map[string]bool{{}, {}, {}}, links: map[string]bool{}, used: map[string]time.Time{},
		parts: map[string]UnfinishedState{}, metaErr: map[string]error{}, removeErr: map[string]error{}}
}

func (m *mapFolders) Open() (bool, error) { return m.there, nil }

func (m *mapFolders) Path(f SweptFolder, name string) string {
	return path.Join("/s", [...]string{"", ".attachctl/partial", ".attachctl/trash"}[f], name)
}

func (m *mapFolders) List(f SweptFolder) ([]TopEntry, error) {
	if f == TrashFolder && !m.trashOpen {
		return nil, nil
	}
	var es []TopEntry
	for n := range m.dirs[f] {
		es = append(es, TopEntry{Name: n, Dir: !m.links[n] || f != StoreFolder, Link: m.links[n] && f == StoreFolder})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es, nil
}

func (m *mapFolders) OpenUpload(id string) (SweptUpload, error) {
	switch {
	case m.links[id]:
		return nil, fault.Errorf(fault.UploadUnreadable, "upload %s: a symlink or not a real folder: %w", id, syscall.ELOOP)
	case !m.dirs[StoreFolder][id]:
		return nil, fault.Errorf(fault.UploadMissing, "upload %s: not there", id)
	}
	return mapUpload{m, id}, nil
}

type mapUpload struct {
	m  *mapFolders
	id string
}

func (u mapUpload) ReadMeta() (*UploadMeta, error) {
	if err := u.m.metaErr[u.id]; err != nil {
		return nil, err
	}
	return &UploadMeta{Info: &Info{Name: "a.bin", Size: 1, Blake3: strings.Repeat("ab", 32)}, Recorded: u.id}, nil
}

func (u mapUpload) LastUsed() (time.Time, bool, error) { return u.m.used[u.id], false, nil }
func (u mapUpload) Close()                             {}

func (m *mapFolders) ReadPartial(id string, hold bool) (UnfinishedState, func(), error) {
	if !m.dirs[PartialsFolder][id] {
		return UnfinishedState{}, nil, NotUnfinished(id, "/s")
	}
	if !hold {
		return m.parts[id], nil, nil
	}
	m.writers++
	return m.parts[id], func() { m.writers-- }, nil
}

func (m *mapFolders) Has(id string) bool { return m.dirs[StoreFolder][id] }

func (m *mapFolders) LockSweep(time.Duration) (func() error, error) {
	m.locked = true
	return func() error { m.locked = false; return nil }, nil
}

func (m *mapFolders) ExcludeUses() (func(), error) { m.excluded++; return func() {}, nil }

func (m *mapFolders) OpenTrash() (bool, error) { m.trashOpen = true; return !m.otherFS, nil }

func (m *mapFolders) Move(from, to SweptFolder, name string) error {
	if m.dirs[to][name] {
		return syscall.EEXIST
	}
	delete(m.dirs[from], name)
	m.dirs[to][name] = true
	return nil
}

func (m *mapFolders) Remove(f SweptFolder, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.removeErr[name]; err != nil && f == TrashFolder {
		return err
	}
	delete(m.dirs[f], name)
	return nil
}

func (m *mapFolders) PruneIndex() { m.pruned++ }
func (m *mapFolders) Close()      { m.trashOpen = false }

// TestSweepFolderTrash: a sweep takes the one-sweep lock, then opens the trash and empties it of
// what a crashed sweep left; a trash on another file system is refused before anything in it is
// removed, and the lock is let go; a dry run takes nothing and leaves the trash as it is.
func TestSweepFolderTrash(t *testing.T) {
	for _, tc := range []struct {
		name            string
		dry, otherFS    bool
		wantErr         fault.Code
		wantLeftInTrash bool
	}{
		{name: "sweep"},
		{name: "dry run", dry: true, wantLeftInTrash: true},
		{name: "trash elsewhere", otherFS: true, wantErr: fault.UploadUnreadable, wantLeftInTrash: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMapFolders()
			m.otherFS = tc.otherFS
			m.dirs[TrashFolder]["crashed"] = true
			sw, err := SweepFolder(m, 2, time.Second, tc.dry)
			if fault.CodeOf(err) != tc.wantErr {
				t.Fatalf("SweepFolder: %v, want %q", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "its trash is on another file system; nothing removed") {
				t.Errorf("error %q", err)
			}
			if m.dirs[TrashFolder]["crashed"] != tc.wantLeftInTrash {
				t.Errorf("the crashed sweep's leftover in the trash: %v, want %v", m.dirs[TrashFolder]["crashed"], tc.wantLeftInTrash)
			}
			if err == nil {
				if m.locked == tc.dry || m.trashOpen == tc.dry {
					t.Errorf("locked %v, trash open %v (dry run %v)", m.locked, m.trashOpen, tc.dry)
				}
				if err := sw.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if m.locked || m.trashOpen {
				t.Errorf("after the sweep: locked %v, trash open %v", m.locked, m.trashOpen)
			}
		})
	}
}

// TestFolderSweeperRemove: what a re-check concludes. A finished upload whose folder a link
// replaced since the listing, and an unfinished one finished since (its folder in the store), are
// gone and left alone, the writer's lock taken for the re-check let go; a stale one is renamed into
// the trash and removed; one whose removal fails is Failed and left in the trash, named; the
// store's index is pruned after.
func TestFolderSweeperRemove(t *testing.T) {
	m := newMapFolders()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"fin", "linked", "stuck", "done"} {
		m.dirs[StoreFolder][id] = true
		m.used[id] = old
	}
	m.links["linked"] = true
	for _, id := range []string{"part", "done"} {
		m.dirs[PartialsFolder][id] = true
		m.parts[id] = UnfinishedState{Name: id + ".bin", Made: old, Written: old}
	}
	m.removeErr["stuck"] = errors.New("permission denied")
	cands := []Entry{
		{ID: "done", Name: "done.bin", Made: old, LastUsed: old}, // listed unfinished, finished since
		{ID: "fin", Name: "a.bin", Finished: true, Made: old, LastUsed: old},
		{ID: "linked", Name: "a.bin", Finished: true, Made: old, LastUsed: old},
		{ID: "part", Name: "part.bin", Made: old, LastUsed: old},
		{ID: "stuck", Name: "a.bin", Finished: true, Made: old, LastUsed: old},
	}
	sw, err := SweepFolder(m, 2, time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	got := map[string]Outcome{}
	var stuck error
	err = sw.Remove(context.Background(), cands, func(Entry) bool { return true }, func(e Entry, o Outcome, err error) error {
		got[e.ID] = o
		if e.ID == "stuck" {
			stuck = err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{"done": Gone, "fin": Removed, "linked": Gone, "part": Removed, "stuck": Failed}
	for id, o := range want {
		if got[id] != o {
			t.Errorf("%s: %v, want %v", id, got[id], o)
		}
	}
	if stuck == nil || !strings.Contains(stuck.Error(), "/s/.attachctl/trash/stuck: removing upload stuck: permission denied (left in the trash)") {
		t.Errorf("the failed removal: %v", stuck)
	}
	if !m.dirs[StoreFolder]["linked"] || !m.dirs[StoreFolder]["done"] || !m.dirs[PartialsFolder]["done"] || !m.dirs[TrashFolder]["stuck"] {
		t.Errorf("what is gone or failed is not where it was left: %v", m.dirs)
	}
	if m.dirs[StoreFolder]["fin"] || m.dirs[PartialsFolder]["part"] || m.dirs[TrashFolder]["fin"] || m.dirs[TrashFolder]["part"] {
		t.Errorf("what was removed is still there: %v", m.dirs)
	}
	if m.writers != 0 || m.excluded == 0 || m.pruned != 1 {
		t.Errorf("writers' locks held %d, exclusions %d, index pruned %d times", m.writers, m.excluded, m.pruned)
	}
}

// TestListFolders: a finished upload whose metadata cannot be read, whatever the fault, is
// skipped with its reason, never the listing's failure; a store that is not there is empty.
func TestListFolders(t *testing.T) {
	m := newMapFolders()
	good, full, part := newID(t), newID(t), newID(t)
	m.dirs[StoreFolder][good], m.dirs[StoreFolder][full] = true, true
	m.metaErr[full] = fault.Errorf(fault.UploadDiskFull, "upload %s: meta.json: no space left on device", full)
	m.dirs[PartialsFolder][part] = true
	m.parts[part] = UnfinishedState{Name: "p.bin"}
	l, err := ListFolders(context.Background(), m, 2)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range l.Entries {
		ids[e.ID] = true
	}
	if len(l.Entries) != 2 || !ids[good] || !ids[part] || len(l.Skipped) != 1 ||
		l.Skipped[0].Path != "/s/"+full || !strings.Contains(l.Skipped[0].Why, "no space left on device") {
		t.Fatalf("listing %+v", l)
	}
	m.there = false
	if l, err := ListFolders(context.Background(), m, 2); err != nil || len(l.Entries)+len(l.Skipped) != 0 {
		t.Fatalf("a store not there: %+v, %v", l, err)
	}
}

func newID(t *testing.T) string {
	t.Helper()
	id, err := NewID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
