package local

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
)

// Limits and SetLimits: the local store is refused on Windows (store_windows.go).
func (l *Local) Limits(ctx context.Context) (store.Limits, error)      { return store.Limits{}, errWindows }
func (l *Local) SetLimits(ctx context.Context, lim store.Limits) error { return errWindows }
func (s *Store) Limits() (store.Limits, error)                         { return store.Limits{}, errWindows }
