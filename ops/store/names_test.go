package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

// NotNested is one rule for every backend: by names (a store's internal folder on the way), then
// by marks from the nearest place up (a store above it, and the upload when the name below that
// store is an upload id).
func TestNotNested(t *testing.T) {
	const id = "01a235f7-ed69-7ea8-b6e3-ada7612bfe34"
	stores := func(places ...string) func(parts []string) func(int) (bool, error) {
		return func(parts []string) func(int) (bool, error) {
			return func(n int) (bool, error) {
				for _, p := range places {
					if p == strings.Join(parts[:n], "/") {
						return true, nil
					}
				}
				return false, nil
			}
		}
	}
	for _, tc := range []struct {
		place   string
		isStore func(parts []string) func(int) (bool, error)
		want    string // the refusal's why and outer place; "" none
	}{
		{"a/s/.attachctl/partial", nil, "inside the internal folder of the store a/s"},
		{"a/s/.attachctl", stores(), "inside the internal folder of the store a/s"},
		{"a/s/" + id + "/inner", stores("a/s"), "inside the upload a/s/" + id + ", inside the store a/s"},
		{"a/s/sub/chat", stores("a/s"), "inside the store a/s"},
		{"a/s/sub/chat", stores("a", "a/s"), "inside the store a/s"}, // the nearest store
		{"a/" + id + "/inner", stores(), ""},                         // an upload's name, and no store around it
		{"a/s/sub/chat", nil, ""},                                    // names alone
		{"a/t", stores("a/s"), ""},
		{"a/s", stores("a/s"), ""}, // the store itself
	} {
		parts := strings.Split(tc.place, "/")
		var isStore func(int) (bool, error)
		if tc.isStore != nil {
			isStore = tc.isStore(parts)
		}
		err := NotNested(tc.place, parts, func(n int) string { return strings.Join(parts[:n], "/") }, isStore)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want none", tc.place, err)
		case tc.want != "" && (fault.CodeOf(err) != fault.StoreNotStore || !strings.Contains(err.Error(), "is "+tc.want+";")):
			t.Errorf("%s: %v; want store.notStore, %s", tc.place, err, tc.want)
		}
	}
	boom := errors.New("boom")
	err := NotNested("a/b", []string{"a", "b"}, func(int) string { return "" }, func(int) (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Errorf("a mark that cannot be read: %v; want its error", err)
	}
}
