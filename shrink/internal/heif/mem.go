package heif

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// limited is one instance's linear memory, held to at most max bytes: a grow past it is
// refused (memory.grow returns -1, so malloc returns NULL), and over records that it was, so
// that the decode's failure is reported as what it is. Every instance's size is counted in
// Memory, whatever the allocator under it.
type limited struct {
	max, size uint64
	over      bool
	// have is what the decode's reservation covers; a growth past it asks grow for the rest
	// first, and short records a refusal.
	have  uint64
	grow  func(n int64) bool
	short bool
	inner experimental.LinearMemory
}

func (l *limited) Reallocate(size uint64) []byte {
	if size > l.max {
		l.over = true
		return nil
	}
	if size > l.have && l.size == 0 {
		// The module's own minimum, which wazero must be given to start it; the reservation's
		// base covers it (shrink's TestReservationAccounting).
		l.have = size
	}
	if size > l.have {
		if l.grow == nil || !l.grow(int64(size-l.have)) {
			l.short = true
			return nil
		}
		l.have = size
	}
	b := l.inner.Reallocate(size)
	if b != nil {
		Memory.Note(int64(size) - int64(l.size))
		l.size = size
	}
	return b
}

func (l *limited) Free() {
	Memory.Note(-int64(l.size))
	l.size = 0
	l.inner.Free()
}

// limitedAllocator makes the memory of one instance, of at most max bytes (never less than the
// module's own minimum, which wazero must be given), and reports it through *got.
func limitedAllocator(lim Limit, got **limited) experimental.MemoryAllocator {
	most := uint64(max(lim.Max, 0))
	have := uint64(max(lim.Reserved, 0))
	if lim.Reserved <= 0 && lim.Grow == nil {
		have = most // no reservation given: all of Max is the decode's
	}
	return experimental.MemoryAllocatorFunc(func(_, moduleMax uint64) experimental.LinearMemory {
		l := &limited{max: min(most, moduleMax), have: have, grow: lim.Grow}
		l.inner = newLinearMemory(l.max)
		*got = l
		return l
	})
}

// Tally counts bytes held now and the most held at once. The decoders' memory is counted in
// one (Memory); shrink counts its reservations in another, so that tests can hold one to the
// other.
type Tally struct {
	mu        sync.Mutex
	now, peak int64
}

// Note adds n (negative: gives back) to what is held.
func (t *Tally) Note(n int64) {
	t.mu.Lock()
	t.now += n
	t.peak = max(t.peak, t.now)
	t.mu.Unlock()
}

// Get reports what is held now and the most held at once since the last ResetPeak.
func (t *Tally) Get() (now, peak int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.now, t.peak
}

// ResetPeak starts the peak again from now.
func (t *Tally) ResetPeak() {
	t.mu.Lock()
	t.peak = t.now
	t.mu.Unlock()
}

// Memory is the bytes of every decoder instance's linear memory: what a memory budget over
// decodes has to cover.
var Memory Tally

// inHeap is a linear memory in a Go slice, grown by copying, for when no mapping can be made.
type inHeap struct{ b []byte }

func (m *inHeap) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.b)) {
		m.b = append(m.b[:cap(m.b)], make([]byte, int(size)-cap(m.b))...)
	}
	m.b = m.b[:size]
	return m.b
}

func (m *inHeap) Free() { m.b = nil }
