// Package wasmcache keeps the machine code that wazero compiles from the WebAssembly libraries
// (libheif and libavif for shrink, pdfium for shrink/doc) in one folder shared by every runtime of
// the process, so that a later process loads the code instead of compiling it again.
package wasmcache

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
)

var state struct {
	sync.Mutex
	set   bool
	cache wazero.CompilationCache
}

// SetDir sets the folder where compiled code is kept, created 0700 when needed; "" means
// attachctl/wasm in the user's cache folder (os.UserCacheDir). The first call in a process wins,
// and a runtime made before any call uses the default: the code of one process is in one place.
func SetDir(dir string) {
	state.Lock()
	defer state.Unlock()
	setLocked(dir)
}

func setLocked(dir string) {
	if state.set {
		return
	}
	state.set = true
	if dir == "" {
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "attachctl", "wasm")
		}
	}
	if dir != "" && os.MkdirAll(dir, 0o700) == nil {
		if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			state.cache = c
			return
		}
	}
	// A folder that cannot be made only costs a compile per process; in it, runtimes still share
	// the code they compiled.
	state.cache = wazero.NewCompilationCache()
}

// RuntimeConfig is a new runtime configuration that uses the cache.
func RuntimeConfig() wazero.RuntimeConfig {
	state.Lock()
	defer state.Unlock()
	setLocked("")
	return wazero.NewRuntimeConfig().WithCompilationCache(state.cache)
}
