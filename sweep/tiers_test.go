package sweep

import (
	"testing"
	"time"

	"github.com/attachctl/attachctl/ops/store"
)

// TestTiers: each tier is judged by its own cutoff, --older-than (Before) fills the tiers that have
// none, and a tier without a cutoff sweeps nothing.
func TestTiers(t *testing.T) {
	now := time.Now()
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	const h, d = time.Hour, 24 * time.Hour
	unfinished := store.Entry{ID: "p", LastUsed: ago(h), Made: ago(2 * h)}
	busy := store.Entry{ID: "b", LastUsed: ago(h), Made: ago(2 * h), Busy: true}
	unused := store.Entry{ID: "u", Finished: true, Made: ago(2 * d)}
	usedLong := store.Entry{ID: "l", Finished: true, Made: ago(16 * d), LastUsed: ago(8 * d)}
	usedLately := store.Entry{ID: "r", Finished: true, Made: ago(10 * d), LastUsed: ago(2 * d)}
	all := []store.Entry{unfinished, busy, unused, usedLong, usedLately}
	for _, tc := range []struct {
		name string
		opts Options
		want string // ids of the stale entries, in order
	}{
		{"three tiers", Options{Unfinished: ago(15 * time.Minute), Unused: ago(d), Before: ago(7 * d)}, "pul"},
		{"older-than alone", Options{Before: ago(7 * d)}, "l"},
		{"older-than 1d", Options{Before: ago(d)}, "ulr"},
		{"unfinished only", Options{Unfinished: ago(15 * time.Minute)}, "p"},
		{"unused only", Options{Unused: ago(d)}, "u"},
		{"used only", Options{Used: ago(d)}, "lr"},
		{"a tier's own overrides", Options{Before: ago(d), Used: ago(30 * d), Unfinished: ago(3 * h)}, "u"},
		{"nothing set", Options{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for _, e := range all {
				if tc.opts.Stale(e) {
					got += e.ID
				}
			}
			if got != tc.want {
				t.Errorf("stale %q, want %q", got, tc.want)
			}
		})
	}
}
