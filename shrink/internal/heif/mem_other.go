//go:build !linux

package heif

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is wazero's own (Go slices) where no mapping allocator is written.
func memoryAllocator() experimental.MemoryAllocator { return nil }
