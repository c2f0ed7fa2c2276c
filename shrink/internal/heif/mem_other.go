//go:build !linux

package heif

import "github.com/tetratelabs/wazero/experimental"

// newLinearMemory is a Go slice where no mapping allocator is written.
func newLinearMemory(uint64) experimental.LinearMemory { return &inHeap{} }
