//go:build unix

package local

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/attachctl/attachctl/ops/store"
	"golang.org/x/sys/unix"
)

// notNested refuses a store folder that lies inside another store or inside an upload
// (store.NotNested): under a store's internal folder (STORE/.attachctl/partial, trash, ...),
// inside a finished upload's folder, or anywhere below a folder that is a store. Such a folder
// would be another store's business: its sweep would take the inner store's uploads for its own
// entries. It is judged on the folder's real place, links on the way resolved, so a link into a
// store's internal folder is no way around it, and it only reads: nothing is written before it
// says yes.
func notNested(abs string) error {
	parts := strings.Split(strings.TrimPrefix(realPath(abs), "/"), "/")
	at := func(n int) string { return "/" + path.Join(parts[:n]...) }
	return store.NotNested(abs, parts, at, func(n int) (bool, error) { return isStoreMark(at(n)), nil })
}

// realPath is abs with the links of its longest existing part resolved, and the rest as given.
func realPath(abs string) string {
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(p) == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// isStoreMark reports whether dir is a store (markedAt), its internal folder followed if a link:
// such a store is still one that nothing may nest in.
func isStoreMark(dir string) bool {
	return markedAt(unix.Open(filepath.Join(dir, InternalDir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0))
}
