//go:build unix

package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/open"
)

// The race test runs this test binary again in roles: touchers that mark uploads used in a loop,
// sweepers that sweep in a loop, and a maker that keeps adding stale uploads. Each logs to a file.
func TestMain(m *testing.M) {
	if role := os.Getenv("SWEEP_RACE_ROLE"); role != "" {
		if err := raceRole(role); err != nil {
			fmt.Fprintln(os.Stderr, role+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	raceUploads  = 20000 // ids the maker may make, each once, until the touchers are done
	raceTouchers = 3
	raceTouches  = 3500 // per toucher, at least
	raceSweepers = 2
)

// raceEnv reads the race test's settings. The sweeps' cutoff is set so that every upload is made
// an hour before it and every touch is after it: an upload is stale exactly until it is touched.
func raceEnv(name string) string { return os.Getenv("SWEEP_RACE_" + name) }

func raceRole(role string) error {
	s, err := openStore(raceEnv("STORE"))
	if err != nil {
		return err
	}
	cutNs, _ := strconv.ParseInt(raceEnv("CUTOFF"), 10, 64)
	cutoff := time.Unix(0, cutNs)
	b, err := os.ReadFile(raceEnv("IDS"))
	if err != nil {
		return err
	}
	ids := strings.Fields(string(b))
	logf, err := os.Create(raceEnv("LOG"))
	if err != nil {
		return err
	}
	defer logf.Close()
	log := bufio.NewWriter(logf)
	defer log.Flush()
	stop := raceEnv("STOP")
	stopped := func() bool { _, err := os.Stat(stop); return err == nil }
	frontier := func() int {
		b, _ := os.ReadFile(raceEnv("FRONTIER"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	switch role {
	case "maker":
		made := cutoff.Add(-time.Hour)
		for i, id := range ids {
			if stopped() {
				break
			}
			if err := makeUpload(s, id, made); err != nil {
				return err
			}
			os.WriteFile(raceEnv("FRONTIER")+".tmp", []byte(strconv.Itoa(i+1)), 0o600)
			os.Rename(raceEnv("FRONTIER")+".tmp", raceEnv("FRONTIER"))
		}
	case "toucher":
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		for n := 0; n < raceTouches; n++ {
			f := frontier()
			lo := max(0, f-400)
			hi := min(len(ids), f+2)
			if rng.Intn(4) == 0 {
				lo = 0
			}
			id := ids[lo+rng.Intn(max(1, hi-lo))]
			ts := time.Now()
			err := s.b.MarkUsed(context.Background(), []string{id}, time.Now())
			te := time.Now()
			switch fault.CodeOf(err) {
			case "":
				fmt.Fprintf(log, "ok %s %d %d\n", id, ts.UnixNano(), te.UnixNano())
			case fault.UploadMissing:
				fmt.Fprintf(log, "missing %s %d %d\n", id, ts.UnixNano(), te.UnixNano())
			default:
				return fmt.Errorf("touch %s: %v", id, err)
			}
		}
	case "sweeper":
		for !stopped() {
			start := time.Now()
			_, err := Run(context.Background(), s.Backend(), Options{Before: cutoff, Wait: time.Minute}, func(r Removed) error {
				lu := "-"
				if r.LastUsed != nil {
					lu = *r.LastUsed
				}
				fmt.Fprintf(log, "rm %s %d %d %s\n", r.ID, start.UnixNano(), time.Now().UnixNano(), lu)
				return nil
			})
			if err != nil {
				return fmt.Errorf("sweep: %v", err)
			}
		}
	}
	return nil
}

// makeUpload builds a finished upload (its metadata as the store writes it, BLAKE3 of "hi") in the store's internal folder and renames it into place.
func makeUpload(s *localStore, id string, made time.Time) error {
	stage := filepath.Join(s.Dir, internalDir, "race-stage", id)
	if err := os.MkdirAll(stage, open.DirMode); err != nil {
		return err
	}
	b, _ := json.Marshal(store.Info{ID: id, Name: "u.txt", Size: 2, Blake3: "85052e9aab1b67b6622d94a08441b09fd5b7aca61ee360416d70de5da67d86ca", Made: made.UTC()})
	os.WriteFile(filepath.Join(stage, "u.txt"), []byte("hi"), open.FileMode)
	os.WriteFile(filepath.Join(stage, store.MetaName), b, open.FileMode)
	return os.Rename(stage, s.UploadDir(id))
}

// TestSweepTouchRace: touchers and sweepers in separate processes, over one store. No upload
// whose touch succeeded is removed by a sweep that started after that touch; no touch that starts
// after a removal succeeds; no removed folder carried a marker; and in the end every id folder is
// a whole upload (no folder brought back to life with only a marker).
func TestSweepTouchRace(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process race test")
	}
	s := newStore(t)
	work := t.TempDir()
	cutoff := time.Now().Add(-time.Minute)
	var ids []string
	for i := 0; i < raceUploads; i++ {
		id, _ := store.NewID()
		ids = append(ids, id)
	}
	idsFile := filepath.Join(work, "ids")
	os.WriteFile(idsFile, []byte(strings.Join(ids, "\n")), 0o600)
	env := append(os.Environ(),
		"SWEEP_RACE_STORE="+s.Dir, "SWEEP_RACE_IDS="+idsFile,
		"SWEEP_RACE_CUTOFF="+strconv.FormatInt(cutoff.UnixNano(), 10),
		"SWEEP_RACE_STOP="+filepath.Join(work, "stop"), "SWEEP_RACE_FRONTIER="+filepath.Join(work, "frontier"))
	start := func(role string, i int) (*exec.Cmd, string) {
		logPath := filepath.Join(work, fmt.Sprintf("%s-%d.log", role, i))
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(env, "SWEEP_RACE_ROLE="+role, "SWEEP_RACE_LOG="+logPath)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, logPath
	}
	var logs []string
	var sweepers, others []*exec.Cmd
	for i := 0; i < raceSweepers; i++ {
		c, l := start("sweeper", i)
		sweepers, logs = append(sweepers, c), append(logs, l)
	}
	maker, l := start("maker", 0)
	others, logs = append(others, maker), append(logs, l)
	for i := 0; i < raceTouchers; i++ {
		c, l := start("toucher", i)
		others, logs = append(others, c), append(logs, l)
	}
	for _, c := range others[1:] {
		if err := c.Wait(); err != nil {
			t.Fatalf("%v: %v", c.Args, err)
		}
	}
	os.WriteFile(filepath.Join(work, "stop"), nil, 0o600)
	for _, c := range append(others[:1], sweepers...) {
		if err := c.Wait(); err != nil {
			t.Fatalf("%v: %v", c.Args, err)
		}
	}
	// A last sweep, after everything: what is left must be exactly the touched uploads.
	var last []Removed
	if _, err := Run(context.Background(), s.Backend(), Options{Before: cutoff}, func(r Removed) error { last = append(last, r); return nil }); err != nil {
		t.Fatal(err)
	}

	type span struct{ start, end int64 }
	okTouches := map[string][]span{}
	allTouches := map[string][]span{}
	type removal struct {
		sweepStart, logged int64
		lastUsed           string
	}
	removals := map[string][]removal{}
	total, ok := 0, 0
	for _, p := range logs {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			a, _ := strconv.ParseInt(fs[2], 10, 64)
			b, _ := strconv.ParseInt(fs[3], 10, 64)
			switch fs[0] {
			case "ok":
				okTouches[fs[1]] = append(okTouches[fs[1]], span{a, b})
				ok++
				fallthrough
			case "missing":
				allTouches[fs[1]] = append(allTouches[fs[1]], span{a, b})
				total++
			case "rm":
				removals[fs[1]] = append(removals[fs[1]], removal{a, b, fs[4]})
			}
		}
		f.Close()
	}
	t.Logf("%d touches (%d succeeded), %d uploads removed during the run, %d by the last sweep", total, ok, len(removals), len(last))
	if total < 10000 {
		t.Fatalf("only %d touches", total)
	}
	for id, rs := range removals {
		if len(rs) > 1 {
			t.Errorf("upload %s removed %d times", id, len(rs))
		}
		for _, r := range rs {
			if r.lastUsed != "-" {
				t.Errorf("upload %s removed with a marker (last used %s): a marker was written into a doomed folder", id, r.lastUsed)
			}
			for _, tc := range okTouches[id] {
				if tc.end < r.sweepStart {
					t.Errorf("upload %s: touched at %d, removed by a sweep started at %d", id, tc.end, r.sweepStart)
				}
				if tc.start > r.logged {
					t.Errorf("upload %s: a touch that started at %d succeeded after its removal at %d", id, tc.start, r.logged)
				}
			}
		}
	}
	for _, r := range last {
		if len(okTouches[r.ID]) > 0 {
			t.Errorf("upload %s was touched but the last sweep removed it", r.ID)
		}
	}
	// What is left: every id folder at the top of the store, each read through the store.
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		if store.ValidID(e.Name()) == nil {
			left = append(left, e.Name())
		}
	}
	listing, err := s.b.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := map[string]time.Time{}
	for _, e := range listing.Entries {
		if e.Finished {
			lastUsed[e.ID] = e.LastUsed
		}
	}
	for _, id := range left {
		if r, err := s.b.Open(context.Background(), id, "u.txt"); err != nil {
			t.Errorf("left in the store, not a whole upload: %s: %v", id, err)
		} else {
			r.Close()
		}
		if used, ok := lastUsed[id]; !ok || used.IsZero() || len(okTouches[id]) == 0 {
			t.Errorf("left in the store: %s: listed %v, last used %v, %d touches", id, ok, used, len(okTouches[id]))
		}
	}
	trash, _ := os.ReadDir(filepath.Join(s.Dir, internalDir, trashDir))
	if len(trash) != 0 {
		t.Errorf("trash not empty: %v", trash)
	}
	fb, _ := os.ReadFile(filepath.Join(work, "frontier"))
	made, _ := strconv.Atoi(string(fb))
	if len(left)+len(removals)+len(last) != made {
		t.Errorf("%d left + %d removed + %d removed last != %d made", len(left), len(removals), len(last), made)
	}
}
