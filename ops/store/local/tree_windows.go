package local

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
)

// Folder uploads, refused on Windows as every other store call is (store_windows.go).

func (s *Store) UploadTree(context.Context, store.TreeSource, store.TreeOptions) (*store.TreeInfo, error) {
	return nil, errWindows
}
func (s *Store) TreeInfo(context.Context, string) (*store.TreeInfo, error) { return nil, errWindows }
func (s *Store) OpenTreeFile(context.Context, string, string, string) (store.Reader, error) {
	return nil, errWindows
}
func (s *Store) FolderFiles(context.Context, string) (int, bool, error) { return 0, false, errWindows }
func (s *Store) VerifyTree(context.Context, string, func(int64)) (*store.TreeInfo, error) {
	return nil, errWindows
}
