// What the tests of several packages share: random bytes from a seed, and
// a program built once for all the tests of a run. Only tests import it.
package storetest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Fill fills b with random bytes from seed: the same seed, the same bytes, on every run.
func Fill(b []byte, seed uint64) {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rand.NewChaCha8(key).Read(b)
}

// Built is a program the tests build with go build, once for all the tests of a run, into a
// temporary folder that Remove removes (from TestMain, after the tests).
type Built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Get builds the package pkg (a path as go build takes it, from the test's folder) as name the
// first time it is asked, with the release's flags, so that CI finds the build in the cache its
// vet step filled; and returns the program's path.
func (b *Built) Get(t testing.TB, pkg, name string) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "attachctl-test-bin"); b.err != nil {
			return
		}
		b.bin = filepath.Join(b.dir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-o", b.bin, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// Remove removes what was built, if anything.
func (b *Built) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
