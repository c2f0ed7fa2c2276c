package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// TestRecognizeUploads: the one rule of what is an upload, over metadata as a backend read it.
func TestRecognizeUploads(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	info := func(id string) *Info {
		return &Info{ID: id, Name: "a.png", Size: 3, Blake3: sum, Made: time.Unix(5, 0)}
	}
	for _, tc := range []struct {
		name string
		meta *UploadMeta
		err  error
		want string // "": an upload; "gone": neither listed nor skipped; else in the Skip's Why
		fail bool   // the listing fails
	}{
		{name: "upload", meta: &UploadMeta{Info: info(sweepID(1)), Recorded: sweepID(1)}},
		{name: "no id kept", meta: &UploadMeta{Info: info(""), NoID: true}},
		{name: "planted metadata", meta: &UploadMeta{Info: info(sweepID(2)), Recorded: sweepID(2)}, want: "names upload"},
		{name: "no BLAKE3", meta: &UploadMeta{Info: &Info{Name: "a.png"}, NoID: true}, want: "no BLAKE3"},
		{name: "no metadata", want: "no metadata"},
		{name: "name not plain", meta: &UploadMeta{Info: &Info{Name: "../x", Blake3: sum}, NoID: true}, want: "no plain file name"},
		{name: "listing disagrees", meta: &UploadMeta{Info: info(sweepID(1)), Recorded: sweepID(1), Listed: strings.Repeat("cd", 32)}, want: "other BLAKE3s"},
		{name: "unreadable", err: fault.Errorf(fault.UploadUnreadable, "upload x: damaged"), want: "damaged"},
		{name: "gone since listed", err: fault.Errorf(fault.UploadMissing, "upload x: missing"), want: "gone"},
		{name: "store down", err: fault.Errorf(fault.StoreUnreachable, "store down"), fail: true},
		{name: "uncoded", err: errors.New("boom"), fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cands := []Candidate{{ID: sweepID(1), Path: "/s/" + sweepID(1)}}
			metas, skips, err := RecognizeUploads(context.Background(), cands, 2, func(context.Context, int) (*UploadMeta, error) {
				return tc.meta, tc.err
			})
			switch {
			case tc.fail:
				if err == nil {
					t.Fatal("listed")
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "":
				if metas[0] != tc.meta || len(skips) != 0 {
					t.Fatalf("%v %v", metas, skips)
				}
			case tc.want == "gone":
				if metas[0] != nil || len(skips) != 0 {
					t.Fatalf("%v %v", metas, skips)
				}
			default:
				if metas[0] != nil || len(skips) != 1 || skips[0].Path != cands[0].Path ||
					!strings.HasPrefix(skips[0].Why, "not an upload of this store") || !strings.Contains(skips[0].Why, tc.want) {
					t.Fatalf("%v %+v", metas, skips)
				}
			}
		})
	}
}
