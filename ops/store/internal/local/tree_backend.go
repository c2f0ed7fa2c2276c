//go:build unix

package local

import (
	"context"

	"github.com/attachctl/attachctl/ops/store"
)

// UploadTree is store.Trees.UploadTree: it makes or marks the store as Begin does.
func (l *backend) UploadTree(ctx context.Context, src store.TreeSource, opts store.TreeOptions) (*store.TreeInfo, error) {
	s, err := l.store(true)
	if err != nil {
		return nil, err
	}
	return s.UploadTree(ctx, src, opts)
}

// TreeInfo is store.Trees.TreeInfo.
func (l *backend) TreeInfo(ctx context.Context, id string) (*store.TreeInfo, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.TreeInfo(ctx, id)
}

// OpenTreeFile is store.Trees.OpenTreeFile.
func (l *backend) OpenTreeFile(ctx context.Context, id, name, rel string) (store.Reader, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.OpenTreeFile(ctx, id, name, rel)
}

// FolderFiles is store.Trees.FolderFiles.
func (l *backend) FolderFiles(ctx context.Context, id string) (int, bool, error) {
	s, err := l.store(false)
	if err != nil {
		return 0, false, err
	}
	return s.FolderFiles(ctx, id)
}

// VerifyTree is store.Trees.VerifyTree.
func (l *backend) VerifyTree(ctx context.Context, id string, progress func(int64)) (*store.TreeInfo, error) {
	s, err := l.store(false)
	if err != nil {
		return nil, err
	}
	return s.VerifyTree(ctx, id, progress)
}
