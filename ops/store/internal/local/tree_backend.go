//go:build unix

package local

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
)

// openTrees opens the store for a call of store.Trees as Begin opens it for an upload (create:
// making or marking it), and as a read does otherwise.
func (l *backend) openTrees(_ context.Context, create bool) (store.TreeBackend, error) {
	s, err := l.store(create)
	if err != nil {
		return nil, err
	}
	return s, nil
}
