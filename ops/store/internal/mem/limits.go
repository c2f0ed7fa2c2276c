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

// Reserver is the store's primitives of reservations (store.Reserver), for the conformance
// suite and for tests of limits across processes.
func (s *Store) Reserver() store.Reserver { return reserver{s} }

type reserver struct{ s *Store }

type limitsHeld struct {
	s    *Store
	once chan struct{}
}

func (r reserver) LockLimits(ctx context.Context, wait time.Duration) (store.LimitsLock, error) {
	s := r.s
	s.mu.Lock()
	err := s.checkStore(true)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := take(ctx, s.limitsLock, wait, func() error {
		return fault.Errorf(fault.StoreLocked, "store %s: the limits lock %s", s.loc, store.HeldBy(store.Holder{}, false, wait))
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

func (r reserver) PutReservation(ctx context.Context, key string, body []byte) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.reserved[key]; ok {
		return fault.Errorf(fault.UploadInvalid, "store %s: reservation %s is there already", s.loc, key)
	}
	s.reserved[key] = append([]byte(nil), body...)
	return nil
}

func (r reserver) Reservations(ctx context.Context) (map[string][]byte, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]byte, len(s.reserved))
	for k, b := range s.reserved {
		out[k] = b
	}
	return out, nil
}

func (r reserver) DropReservation(ctx context.Context, key string) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reserved, key)
	return nil
}
