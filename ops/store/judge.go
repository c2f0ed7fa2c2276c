package store

import (
	"slices"
	"strings"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
)

// MarkName is the store's mark inside its internal folder (InternalDir/MarkName), on every
// backend: what says the location is a store (its body: MarkText).
const MarkName = "store"

// PartialDir is the folder of the unfinished uploads inside the internal folder
// (InternalDir/PartialDir).
const PartialDir = "partial"

// Marks is the one rule of what, in a store's internal folder, makes a folder a store for the
// walk that finds stores (StoresUnder) and the refusal of a store inside one (NotNested): the
// mark, a file, or (stores of earlier versions wrote none) the partial folder. has reports
// whether name is there in the internal folder as a folder (dir) or a file, no link followed.
func Marks(has func(name string, dir bool) bool) bool {
	return has(MarkName, false) || has(PartialDir, true)
}

// JudgeNames is how many names at the top of a location a backend gives Judge at most: enough to
// find an upload folder among what a store made by hand holds, few enough to read at once.
const JudgeNames = 256

// Seen is what a backend found at its location, read without following a link or writing
// anything: what Judge decides on. Names are read only when there is no mark, and a backend that
// found the internal folder need give no other name.
type Seen struct {
	There bool // something is at the location, if only an empty folder (Names say what else)
	Mark  bool // the mark, InternalDir/MarkName, is there
	// Names are some of the names at the top of the location (at most JudgeNames, in any order):
	// the internal folder among them is a folder named InternalDir.
	Names []TopEntry
}

// Verdict is what Judge finds a location to be.
type Verdict int

const (
	NotThere Verdict = iota // nothing is there: a store not made yet, made by the first upload
	Empty                   // a folder with nothing in it: a store not made yet, marked by the first upload
	Marked                  // a store with its mark
	LaidOut                 // a store without its mark (an earlier version's, or one being made): marked by the next upload
)

// Store tells whether the location holds a store (marked or not): one whose uploads there are to read.
func (v Verdict) Store() bool { return v == Marked || v == LaidOut }

// Judge is the one rule of what a location is (docs/store.md), on every backend: with its mark
// it is a store; without, its internal folder, or an upload folder (an upload id) among its
// names, makes it a store of an earlier version (or one another process is making), which the
// next upload marks; nothing, or an empty folder, is a store not made yet. Anything else is
// store.notStore, in one wording that names what it holds: nothing may be written to it.
func Judge(loc string, seen Seen) (Verdict, error) {
	switch {
	case seen.Mark:
		return Marked, nil
	case slices.ContainsFunc(seen.Names, func(e TopEntry) bool { return e.Dir && (e.Name == InternalDir || ValidID(e.Name) == nil) }):
		return LaidOut, nil
	case len(seen.Names) > 0:
		return 0, NotAStore(loc, seen.Names)
	case seen.There:
		return Empty, nil
	}
	return NotThere, nil
}

// NotAStore is the refusal of the location loc that holds names (the first by name is said) and
// no store: store.notStore, one wording on every backend.
func NotAStore(loc string, names []TopEntry) error {
	first := slices.MinFunc(names, func(a, b TopEntry) int { return strings.Compare(a.Name, b.Name) })
	held := manifest.Quote(first.Name)
	switch {
	case first.Name == "": // an S3 prefix's own "folder" object (P/), as a console makes one
		held = `""`
	case first.Dir:
		held += "/"
	}
	return fault.Errorf(fault.StoreNotStore, "store %s: is not an attachctl store: it holds %s, and no %s/%s mark and no upload; nothing was written to it",
		loc, held, InternalDir, MarkName)
}
