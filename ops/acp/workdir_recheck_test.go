//go:build unix

package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// The work folder is checked again once the inline files are checked: swapped for a symlink (to the
// very folder the copies went into), for another folder, or opened to others while resolve ran,
// it is refused with upload.unreadable; nothing is returned to write and nothing marked used.
func TestResolveWorkdirRecheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		swap func(t *testing.T, work string)
		why  string
	}{
		{"untouched", nil, ""},
		{"swapped for a symlink", func(t *testing.T, work string) {
			must(t, os.Rename(work, work+".real"))
			must(t, os.Symlink(work+".real", work))
		}, "replaced by a symlink"},
		{"swapped for another folder", func(t *testing.T, work string) {
			must(t, os.Rename(work, work+".old"))
			must(t, os.Mkdir(work, 0o700))
		}, "replaced by another folder"},
		{"opened to others", func(t *testing.T, work string) {
			must(t, os.Chmod(work, 0o777))
		}, "now writable by others"},
		{"removed", func(t *testing.T, work string) {
			must(t, os.RemoveAll(work))
		}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t)
			img := rsPut(t, s, "shot.png", "image/png", rsPNG(t, 4096, 2))
			txt := rsPut(t, s, "notes.bin", "", rsBytes(500, 3))
			work := filepath.Join(t.TempDir(), "work")
			opts := Options{Workdir: work, Caps: Caps{Image: true}}
			if tc.swap != nil {
				opts.BeforeRecheck = func() { tc.swap(t, work) }
			}
			res, err := Resolve(rsPrompt(t, []*manifest.Record{img, txt}, "look"), rsLocal(s), opts)
			if tc.why == "" {
				if err != nil || res.Copied != 2 {
					t.Fatalf("%v", err)
				}
				rsValidate(t, rsOutput(t, res))
				return
			}
			if res != nil || fault.CodeOf(err) != fault.UploadUnreadable || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("%v, want upload.unreadable: %s", err, tc.why)
			}
			for _, r := range []*manifest.Record{img, txt} {
				if rsUsed(t, s, r.Upload.ID) {
					t.Fatal("a refused prompt marked its upload used")
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
