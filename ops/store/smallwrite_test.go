package store

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/zeebo/blake3"
)

// smallBuilds is a SmallBuilder over ids: it keeps the bytes each build was given, fails with err
// when set, and drops and names what it took apart; reserved says whether the build's reservation was
// there when it built.
type smallBuilds struct {
	mu       sync.Mutex
	m        *memReserver
	err      error
	built    map[string][]byte
	reserved map[string]bool
	unbuilt  []string
}

func (s *smallBuilds) BuildSmall(id, name, sum string, data []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", s.err
	}
	s.m.mu.Lock()
	_, s.reserved[id] = s.m.rs[id]
	s.m.mu.Unlock()
	s.built[id] = bytes.Clone(data)
	return id, nil
}

func (s *smallBuilds) UnbuildSmall(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unbuilt = append(s.unbuilt, id)
	delete(s.built, id)
}

// joinRefused is a GroupCommitter whose BatchJoin refuses every upload with err when set.
type joinRefused struct {
	*fakeCommits
	err error
}

func (j joinRefused) BatchJoin(g *[]string, id string) error {
	if j.err != nil {
		return j.err
	}
	return j.fakeCommits.BatchJoin(g, id)
}

// A small source streamed into a batch that builds small uploads is read whole in one pass,
// hashed, admitted against the limits before anything is built, and built with its bytes for
// the batch's commit, its reservation held until then; the same bytes again name that upload
// without a second build. Refused by the limits, it builds nothing; a build that fails, or one
// the backend keeps out of the batch, leaves no reservation (taken apart when built), and the next
// stream of the same bytes builds its own. A source of more than one chunk, or a batch that
// builds no small uploads, gets no small write.
func TestSmallWrite(t *testing.T) {
	ctx := context.Background()
	content := []byte("small file\n")
	want := sum3(content)
	src := Source{Path: "/src/a.bin", Name: "a.bin", Size: int64(len(content))}
	full := fault.Errorf(fault.UploadDiskFull, "no room")
	cases := []struct {
		name              string
		limits            Limits
		buildErr, joinErr error
		wantErr           fault.Code
		unbuilt           int
	}{
		{name: "built, reserved until the commit", limits: Limits{MaxFiles: 5}},
		{name: "no limits: nothing reserved", limits: Limits{}},
		{name: "refused by the limits: nothing built", limits: Limits{MaxFiles: 1}, wantErr: fault.StoreFull},
		{name: "the build fails", limits: Limits{MaxFiles: 5}, buildErr: full, wantErr: fault.UploadDiskFull},
		{name: "kept out of the batch: taken apart", limits: Limits{MaxFiles: 5}, joinErr: full, wantErr: fault.UploadDiskFull, unbuilt: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &memReserver{rs: map[string][]byte{}}
			one := &Listing{Entries: []Entry{{ID: idC, Name: "c.bin", Size: 1, Finished: true}}}
			q := &Quota{R: m, Loc: "S", M: fixedMark(MarkText(c.limits)), List: func(context.Context) (*Listing, error) { return one, nil }}
			sb := &smallBuilds{m: m, err: c.buildErr, built: map[string][]byte{}, reserved: map[string]bool{}}
			f := newFakeCommits()
			b := NewGroupBatch[string, []string](nil, joinRefused{f, c.joinErr}, 100)
			var progress int64
			opts := StreamOptions{Chunk: 64, Batch: b, Progress: func(n int64) { progress += n }}
			if SmallWrite(src, opts) != nil {
				t.Fatal("a batch that builds no small uploads gave a small write")
			}
			b.BuildsSmall(q, sb)
			if SmallWrite(Source{Name: "big.bin", Size: 65}, opts) != nil {
				t.Fatal("a source of more than one chunk got a small write")
			}
			if SmallWrite(src, StreamOptions{Chunk: 64}) != nil {
				t.Fatal("a small write without a batch")
			}
			stream := func() (*Info, error) {
				w := SmallWrite(src, opts)
				defer w.Close(nil)
				h := blake3.New()
				var seen []byte
				pass := StreamPass{Size: src.Size, Chunk: 64, Hash: h, Observe: func(p []byte) { seen = append(seen, p...) }, Progress: opts.Progress}
				if info, err := w.Write(ctx, &memStreamSource{Reader: bytes.NewReader(content)}, 0, pass); info != nil || err != nil {
					t.Fatalf("Write: %v, %v", info, err)
				}
				if !bytes.Equal(seen, content) {
					t.Fatalf("observed %q", seen)
				}
				info, err := w.Publish(ctx, want)
				if err == nil && w.ID() != info.ID {
					t.Fatalf("ID %q, published as %q", w.ID(), info.ID)
				}
				return info, err
			}
			info, err := stream()
			if fault.CodeOf(err) != c.wantErr {
				t.Fatalf("Publish: %v, want %q", err, c.wantErr)
			}
			if len(sb.unbuilt) != c.unbuilt {
				t.Fatalf("taken apart %v, want %d", sb.unbuilt, c.unbuilt)
			}
			if c.wantErr != "" {
				if len(m.rs) != 0 || progress != 0 {
					t.Fatalf("after a refusal: %d reserved, progress %d", len(m.rs), progress)
				}
				if c.buildErr == nil && c.joinErr == nil && len(sb.built) != 0 {
					t.Fatal("built though refused by the limits")
				}
				if b.Find(want, src.Name) != "" {
					t.Fatal("the claim of the bytes was not given up")
				}
				if c.wantErr == fault.StoreFull {
					return
				}
				sb.err, b.c = nil, f // the next stream of the same bytes builds its own
				if info, err := stream(); err != nil || len(sb.built) != 1 || sb.built[info.ID] == nil {
					t.Fatalf("a stream after a failed one: %v, %v, built %d", info, err, len(sb.built))
				}
				return
			}
			if !bytes.Equal(sb.built[info.ID], content) || info.Blake3 != want || info.Size != src.Size || progress != src.Size {
				t.Fatalf("built %q as %+v, progress %d", sb.built[info.ID], info, progress)
			}
			if _, held := m.rs[info.ID]; sb.reserved[info.ID] != !c.limits.None() || held != !c.limits.None() {
				t.Fatalf("reserved when built %v, until the commit %v; want %v", sb.reserved[info.ID], held, !c.limits.None())
			}
			again, err := stream()
			if err != nil || again.ID != info.ID || len(sb.built) != 1 {
				t.Fatalf("the same bytes again: %+v, %v, %d built; want %s named again", again, err, len(sb.built), info.ID)
			}
			if err := b.Commit(); err != nil || !slices.Equal(f.committed()[0], []string{info.ID}) {
				t.Fatalf("Commit: %v, committed %v", err, f.committed())
			}
		})
	}
}

// A batch's staging area is made once, at the first Get, under a new upload id, however many ask
// for it at once; a make that fails leaves none (the next Get tries again); Drop removes it, and
// the next Get makes a new one.
func TestStaging(t *testing.T) {
	var st Staging[string]
	made := 0
	make := func(id string) (string, error) {
		if err := ValidID(id); err != nil {
			t.Errorf("made with %q: %v", id, err)
		}
		made++
		return id, nil
	}
	var removed []string
	remove := func(s string) { removed = append(removed, s) }
	st.Drop(remove) // none yet
	if len(removed) != 0 {
		t.Fatalf("removed %v with none made", removed)
	}
	if _, err := st.Get(func(string) (string, error) { return "half", errors.New("disk full") }); err == nil {
		t.Fatal("a failed make gave a staging area")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]bool{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := st.Get(func(id string) (string, error) { mu.Lock(); defer mu.Unlock(); return make(id) })
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got[s] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if made != 1 || len(got) != 1 {
		t.Fatalf("made %d, got %v", made, got)
	}
	first, _ := st.Get(make)
	st.Drop(remove)
	st.Drop(remove)
	if !slices.Equal(removed, []string{first}) {
		t.Fatalf("removed %v, want %s once", removed, first)
	}
	if next, _ := st.Get(make); next == first || made != 2 {
		t.Fatalf("after Drop: %s (made %d), first was %s", next, made, first)
	}
}
