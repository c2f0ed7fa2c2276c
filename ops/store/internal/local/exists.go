//go:build unix

package local

import (
	"context"
	"errors"
	"os"
)

// Exists reports whether anything is at the store's folder (an empty folder is an empty store;
// what is there is judged by the first call that reads it).
func (s *localStore) Exists(context.Context) (bool, error) {
	_, err := os.Lstat(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
