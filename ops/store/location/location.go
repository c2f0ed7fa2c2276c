// Package location opens a store by its location, as restic's internal/backend/location does:
// a registry maps a scheme ("s3" in s3://BUCKET/PREFIX) to the factory of its backend, and a
// location with no scheme is a folder on this machine (the factory registered for ""). The
// registry imports no backend: ops/store/open registers attachctl's backends in it from typed
// options, and a program with a backend of its own registers that too.
package location

import (
	"context"
	"path/filepath"
	"sort"
	"strings"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// Factory opens the store at a location of its scheme. Opening sends and writes nothing: the
// backend judges the location at its first call.
type Factory struct {
	Scheme string // "s3"; "" for a folder on this machine
	Open   func(ctx context.Context, loc string) (store.Backend, error)
}

// Registry is a set of factories by scheme.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds f, replacing a factory of the same scheme.
func (r *Registry) Register(f Factory) { r.factories[f.Scheme] = f }

// Scheme is the scheme of loc ("s3" for s3://BUCKET/PREFIX), "" for a folder. A Windows drive
// letter (C:\x) is a folder.
func Scheme(loc string) string {
	i := strings.Index(loc, "://")
	if i < 2 { // no scheme, or one letter: a drive
		return ""
	}
	for _, c := range loc[:i] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return ""
		}
	}
	return loc[:i]
}

// Open opens the store at loc with the factory of its scheme; a scheme no factory is registered
// for is upload.invalid, naming those that are.
func (r *Registry) Open(ctx context.Context, loc string) (store.Backend, error) {
	scheme := Scheme(loc)
	f, ok := r.factories[scheme]
	if !ok {
		var known []string
		for s := range r.factories {
			if s != "" {
				known = append(known, s+"://")
			}
		}
		sort.Strings(known)
		return nil, fault.Errorf(fault.UploadInvalid, "store %q: no store of scheme %s:// (a folder, or %s)", loc, scheme, strings.Join(known, ", "))
	}
	if scheme == "" {
		abs, err := filepath.Abs(loc)
		if err != nil {
			return nil, fault.Errorf(fault.UploadInvalid, "store %q: %v", loc, err)
		}
		loc = abs
	}
	return f.Open(ctx, loc)
}
