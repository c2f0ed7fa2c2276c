package mem

import (
	"context"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// marker keeps the store's mark, its bytes in memory (store.Marker).
type marker struct{ s *Store }

func (m marker) MakeStore(context.Context) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.checkStore(true)
}

func (m marker) ReadMark(context.Context) ([]byte, string, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.mark, "", m.s.checkStore(false)
}

func (m marker) ReplaceMark(_ context.Context, body []byte, _ string) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	m.s.mark = append([]byte(nil), body...)
	return nil
}

// Reserver is the store's primitives of reservations (store.ObjectReserver), for the conformance
// suite and for tests of limits across processes.
func (s *Store) Reserver() store.Reserver { return s.quota.R }

type limitsHeld struct {
	s    *Store
	once chan struct{}
}

func (s *Store) lockLimits(ctx context.Context, wait time.Duration) (store.LimitsLock, error) {
	s.mu.Lock()
	err := s.checkStore(true)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := take(ctx, s.limitsLock, wait, func() error {
		return fault.Errorf(fault.StoreLocked, "store %s: %s %s", s.loc, store.LockName("limits"), store.HeldBy(store.Holder{}, false, wait))
	}); err != nil {
		return nil, err
	}
	return &limitsHeld{s: s, once: make(chan struct{}, 1)}, nil
}

func (h *limitsHeld) Unlock(ctx context.Context) (bool, error) {
	select {
	case h.once <- struct{}{}:
		<-h.s.limitsLock
		return true, nil
	default:
		return false, nil // unlocked before: not held any more
	}
}
