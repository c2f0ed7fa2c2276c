package stage

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSamplePick(t *testing.T) {
	var es []Checked
	for i := range 30 {
		es = append(es, Checked{ID: fmt.Sprintf("id-%02d", i), Size: 100})
	}
	for _, tc := range []struct {
		name  string
		s     Sample
		n     int
		bytes int64
	}{
		{"10%", Sample{Fraction: 0.1, Seed: 1}, 3, 300},
		{"1/7 rounds up", Sample{Fraction: 1.0 / 7, Seed: 1}, 5, 500},
		{"all", Sample{Fraction: 1, Seed: 1}, 30, 3000},
		{"tiny share takes one", Sample{Fraction: 0.001, Seed: 1}, 1, 100},
		{"bytes", Sample{Bytes: 1050, Seed: 1}, 10, 1000},
		{"bytes under one upload take one", Sample{Bytes: 10, Seed: 1}, 1, 100},
	} {
		got := tc.s.Pick(es)
		var bytes int64
		for _, e := range got {
			bytes += e.Size
		}
		if len(got) != tc.n || bytes != tc.bytes {
			t.Errorf("%s: picked %d uploads, %d bytes; want %d, %d", tc.name, len(got), bytes, tc.n, tc.bytes)
		}
		if !slices.IsSortedFunc(got, func(a, b Checked) int { return strings.Compare(a.ID, b.ID) }) {
			t.Errorf("%s: not in id order: %v", tc.name, got)
		}
	}
	// The same seed, the same choice, whatever order the listing came in; another seed, another.
	a := Sample{Fraction: 0.2, Seed: 42}.Pick(es)
	rev := slices.Clone(es)
	slices.Reverse(rev)
	if b := (Sample{Fraction: 0.2, Seed: 42}).Pick(rev); !slices.Equal(a, b) {
		t.Errorf("seed 42 picked %v, then %v", a, b)
	}
	if b := (Sample{Fraction: 0.2, Seed: 43}).Pick(es); slices.Equal(a, b) {
		t.Errorf("seeds 42 and 43 picked the same: %v", a)
	}
	if got := (Sample{Fraction: 0.5}).Pick(nil); got != nil {
		t.Errorf("an empty store: picked %v", got)
	}
}
