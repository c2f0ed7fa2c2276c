package heif

import (
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// newLinearMemory gives an instance its linear memory as one anonymous mapping of its maximum
// size, of which only the pages the decoder touches are ever resident. Growing it is then free
// (no copy into a larger Go slice, whose old copies would stay on the heap until a collection),
// and closing the instance hands the memory straight back to the system.
func newLinearMemory(max uint64) experimental.LinearMemory {
	if max > 1<<32 || int(max) <= 0 { // wasm32 never asks more; a 32-bit int cannot say it
		return &inHeap{}
	}
	b, err := unix.Mmap(-1, 0, int(max), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return &inHeap{}
	}
	return &mapped{b: b}
}

type mapped struct{ b []byte }

func (m *mapped) Reallocate(size uint64) []byte {
	if size > uint64(len(m.b)) {
		return nil
	}
	return m.b[:size:size]
}

func (m *mapped) Free() {
	if m.b != nil {
		unix.Munmap(m.b)
		m.b = nil
	}
}
