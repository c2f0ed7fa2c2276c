package local

import "github.com/attachctl/attachctl/ops/store"

// StoresUnder refuses on Windows, as the local store does (store_windows.go).
func StoresUnder(root string) ([]string, []store.Skip, error) { return nil, nil, errWindows }
