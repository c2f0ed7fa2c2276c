package stage

import (
	"errors"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"
)

func TestOrderedKeepsOrder(t *testing.T) {
	for _, jobs := range []int{0, 1, 3, 8} {
		n, i := 500, 0
		var inFlight, most atomic.Int64
		var got []int
		err := Ordered(jobs,
			func() (int, bool, error) {
				if i == n {
					return 0, false, nil
				}
				i++
				return i, true, nil
			},
			func(v int) int {
				cur := inFlight.Add(1)
				for {
					m := most.Load()
					if cur <= m || most.CompareAndSwap(m, cur) {
						break
					}
				}
				time.Sleep(time.Duration(rand.Intn(200)) * time.Microsecond)
				inFlight.Add(-1)
				return v * 10
			},
			func(v int) error { got = append(got, v); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("jobs %d: %d results, want %d", jobs, len(got), n)
		}
		for k, v := range got {
			if v != (k+1)*10 {
				t.Fatalf("jobs %d: result %d is %d, out of order", jobs, k, v)
			}
		}
		if limit := int64(max(jobs, 1)); most.Load() > limit {
			t.Errorf("jobs %d: %d ran at once", jobs, most.Load())
		}
	}
}

func TestOrderedReadErrorAfterItemsTaken(t *testing.T) {
	bad := errors.New("line 4 is bad")
	i := 0
	var got []int
	err := Ordered(4,
		func() (int, bool, error) {
			i++
			if i == 4 {
				return 0, false, bad
			}
			return i, true, nil
		},
		func(v int) int { return v },
		func(v int) error { got = append(got, v); return nil })
	if err != bad {
		t.Fatalf("err %v", err)
	}
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("items before the error: %v", got)
	}
}

func TestOrderedEmitErrorStops(t *testing.T) {
	stop := errors.New("stdout closed")
	taken := 0
	err := Ordered(2,
		func() (int, bool, error) { taken++; return taken, true, nil }, // endless
		func(v int) int { return v },
		func(v int) error {
			if v == 10 {
				return stop
			}
			return nil
		})
	if err != stop {
		t.Fatalf("err %v", err)
	}
}
