package storetest

import "github.com/attachctl/attachctl/ops/store/internal/mem"

// Mem is a store kept in memory (ops/store/internal/mem): it passes this conformance suite, and
// the tests of what sits above the seam (sweep's policy, the stages, resolve) run on it instead
// of a temporary folder per case. Its hooks set its clock, hold an upload as a writer would,
// plant what is not an upload, and change a stored file's bytes.
type Mem = mem.Store

// NewMem returns an empty in-memory store at the location loc (mem://NAME).
func NewMem(loc string) *Mem { return mem.New(loc) }
