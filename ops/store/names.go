package store

import (
	"encoding/hex"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/google/uuid"
)

// Names every backend reserves inside an upload: its metadata and its marker.
const (
	MetaName = ".upload.json"
	UsedName = ".used"
)

// InternalDir is the store's own folder at its top, on every backend (docs/store.md): never an
// upload id, and neither listed nor skipped; a folder that holds one is a store.
const InternalDir = ".attachctl"

// NotNested refuses a store whose place lies inside another store (docs/store.md), judged by names
// and marks: parts are the names of its place from the top down (a folder's real path, a bucket's
// prefix), at(n) names the place of parts[:n], and isStore(n) tells whether that place holds a
// store (nil: the names alone are judged). A part that is a store's internal folder is inside
// that store; a place below a store is inside it, and inside the upload too when the name below
// the store is an upload id.
func NotNested(loc string, parts []string, at func(n int) string, isStore func(n int) (bool, error)) error {
	if i := slices.Index(parts, InternalDir); i >= 0 {
		return Nested(loc, "inside the internal folder of the store", at(i))
	}
	for n := len(parts) - 1; isStore != nil && n >= 0; n-- {
		ok, err := isStore(n)
		switch {
		case err != nil:
			return err
		case ok && ValidID(parts[n]) == nil:
			return Nested(loc, "inside the upload "+at(n+1)+", inside the store", at(n))
		case ok:
			return Nested(loc, "inside the store", at(n))
		}
	}
	return nil
}

// NewID returns a fresh upload id: a lowercase canonical UUIDv7.
func NewID() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// ValidID checks that id is a canonical lowercase UUIDv7 (docs/store.md, "Ids and names").
func ValidID(id string) error {
	if len(id) != 36 || strings.ToLower(id) != id {
		return fault.Errorf(fault.UploadInvalid, "id %q: not a canonical lowercase UUIDv7", id)
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
		return fault.Errorf(fault.UploadInvalid, "id %q: not a canonical lowercase UUIDv7", id)
	}
	return nil
}

// ValidName checks that name is a plain name (docs/store.md, "Ids and names") and not one the store
// reserves.
func ValidName(name string) error {
	switch {
	case name == "":
		return notPlain("name is empty")
	case len(name) > 255:
		return notPlain("name %.40q...: longer than 255 bytes", name)
	case !utf8.ValidString(name):
		return notPlain("name %q: not valid UTF-8", name)
	case strings.ContainsAny(name, "/\x00"):
		return notPlain("name %q: contains a slash or NUL", name)
	case name == "." || name == "..":
		return notPlain("name %q: not a plain name", name)
	case name == MetaName || name == UsedName:
		return fault.Errorf(fault.UploadInvalid, "name %q: reserved by the store", name)
	}
	return nil
}

// notPlain refuses a name in words that state the rule of plain names, the same words as a path
// that is not UTF-8 (file.badName).
func notPlain(format string, args ...any) error {
	return fault.Errorf(fault.UploadInvalid, format+"; "+manifest.PlainRule, args...)
}

// CheckHex normalises an expected BLAKE3: "" or 64 hex digits, in lower case (upload.invalid
// otherwise).
func CheckHex(h string) (string, error) {
	if h == "" {
		return "", nil
	}
	l := strings.ToLower(h)
	if _, err := hex.DecodeString(l); err != nil || len(l) != 64 {
		return "", fault.Errorf(fault.UploadInvalid, "blake3 %q: not 64 hex digits", h)
	}
	return l, nil
}
