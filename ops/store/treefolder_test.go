package store

import (
	"context"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// infoFails is memTrees whose Info fails with err: a backend that keeps a file upload's metadata
// elsewhere than MetaName and cannot read it.
type infoFails struct {
	*memTrees
	err error
}

func (b infoFails) Info(context.Context, string) (*Info, error) { return nil, b.err }

// An upload that keeps no metadata object is what Info says it is: when Info finds it damaged or
// cannot reach the store, that is the answer, not upload.missing (the metadata object's absence
// alone); when Info finds nothing either, upload.missing.
func TestTreeMetaElsewhere(t *testing.T) {
	const id = "0190c4d2-0000-7000-8000-000000000001"
	for _, code := range []fault.Code{fault.UploadUnreadable, fault.StoreUnreachable, fault.UploadMissing} {
		b := infoFails{newMemTrees(1), fault.Errorf(code, "upload %s: as Info says", id)}
		for name, call := range map[string]func() error{
			"FolderFiles": func() error { _, _, err := FolderFilesOf(context.Background(), b, id); return err },
			"TreeInfo":    func() error { _, err := TreeInfoOf(context.Background(), b, id); return err },
		} {
			if err := call(); fault.CodeOf(err) != code {
				t.Errorf("%s with Info failing %s: %v", name, code, err)
			}
		}
	}
}
