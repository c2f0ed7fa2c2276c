package ops

import (
	"path/filepath"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/ops/store"
)

// Source is what every backend's upload stage starts from: the file rec names, as an absolute
// path, the plain name it is uploaded under (rec.Name, else the file's own name), and the BLAKE3
// the record carries ("" when none), each checked as SPEC section 5 says.
func Source(rec *manifest.Record) (abs, name, blake3 string, err error) {
	if abs, err = filepath.Abs(rec.Path); err != nil {
		return "", "", "", manifest.Errorf(manifest.FileUnreadable, "%s: %v", rec.Path, err)
	}
	name = rec.Name
	if name == "" {
		name = filepath.Base(abs)
	}
	if err = store.ValidName(name); err != nil {
		return "", "", "", err
	}
	if blake3, err = store.CheckHex(rec.Blake3); err != nil {
		return "", "", "", err
	}
	return abs, name, blake3, nil
}
