package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// takeLease takes a new lease tag of o at once (no wait).
func takeLease(o LeaseObjects, tag string, dur time.Duration) (*Lease, error) {
	l := NewLease(o, "mem://s", tag, dur, tag == "limits")
	return l, l.Take(context.Background(), 0, time.Millisecond, time.Millisecond, "", "its holder")
}

// The lease's rules, each as a holder meets it: one holder at a time, named to the one refused;
// a lock whose lease ran out, or that is not a lease's, is taken over; a holder's renewals keep it
// past its lease; a renewal that finds the lock another's says it lost it; Unlock says whether
// the lock was still this holder's, and removes only its own.
func TestLease(t *testing.T) {
	ctx := context.Background()
	key := LeaseKey("sweep")

	t.Run("OneHolderNamed", func(t *testing.T) {
		var o MapObjects
		l, err := takeLease(&o, "sweep", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
		obj, _ := o.Get(ctx, key)
		if !strings.HasPrefix(string(obj.Body), "sweep ") || obj.Meta[LeaseNonceKey] == "" {
			t.Fatalf("the lock as written: %q %v", obj.Body, obj.Meta)
		}
		_, err = takeLease(&o, "sweep", time.Minute)
		if fault.CodeOf(err) != fault.StoreLocked || !strings.Contains(err.Error(), fmt.Sprintf("is held by pid %d", Me().PID)) {
			t.Fatalf("a second holder: %v, want store.locked naming the first", err)
		}
	})

	t.Run("ExpiredOrForeignTakenOver", func(t *testing.T) {
		for _, body := range []string{
			"sweep " + time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano) + "\n",
			"not a lease\n",
		} {
			var o MapObjects
			o.Put(ctx, key, "", []byte(body))
			l, err := takeLease(&o, "sweep", time.Minute)
			if err != nil {
				t.Fatalf("over %q: %v", body, err)
			}
			if held, err := l.Unlock(ctx); !held || err != nil {
				t.Fatalf("unlock after taking over %q: %v %v", body, held, err)
			}
		}
		var o MapObjects
		o.Put(ctx, key, "", []byte("sweep "+time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)+"\n"))
		if _, err := takeLease(&o, "sweep", time.Minute); fault.CodeOf(err) != fault.StoreLocked {
			t.Fatalf("over a live lease of no known holder: %v, want store.locked", err)
		} else if strings.Contains(err.Error(), "is held by") {
			t.Fatalf("a holder named where the lock names none: %v", err)
		}
	})

	t.Run("RenewedPastItsLease", func(t *testing.T) {
		var o MapObjects
		dur := 200 * time.Millisecond
		l, err := takeLease(&o, "limits", dur)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * dur)
		if _, err := takeLease(&o, "limits", dur); fault.CodeOf(err) != fault.StoreLocked {
			t.Fatalf("taken while its holder holds it past its lease: %v, want store.locked", err)
		}
		if l.Lost() {
			t.Fatal("a renewed lease says it was lost")
		}
		if held, err := l.Unlock(ctx); !held || err != nil {
			t.Fatalf("unlock: %v %v, want held", held, err)
		}
		if _, err := o.Get(ctx, LeaseKey("limits")); !errors.Is(err, ErrNoObject) {
			t.Fatalf("the lock after Unlock: %v, want none", err)
		}
	})

	t.Run("TakenOverIsLost", func(t *testing.T) {
		var o MapObjects
		dur := 100 * time.Millisecond
		l, err := takeLease(&o, "sweep", dur)
		if err != nil {
			t.Fatal(err)
		}
		// Another holder took it over (this one stalled past its lease).
		obj, _ := o.Get(ctx, key)
		o.PutMeta(ctx, key, obj.Version, []byte("sweep x\n"), map[string]string{LeaseNonceKey: "other"})
		deadline := time.Now().Add(5 * time.Second)
		for !l.Lost() && time.Now().Before(deadline) {
			time.Sleep(dur / 4)
		}
		if !l.Lost() {
			t.Fatal("a lease taken over is not lost")
		}
		if held, err := l.Unlock(ctx); held || err != nil {
			t.Fatalf("unlock of a lease taken over: %v %v, want not held", held, err)
		}
		if obj, err := o.Get(ctx, key); err != nil || obj.Meta[LeaseNonceKey] != "other" {
			t.Fatalf("the other holder's lock after this one's Unlock: %v %v", obj.Meta, err)
		}
	})

	t.Run("ServerError", func(t *testing.T) {
		o := &failingLeases{err: errors.New("a server's odd answer")}
		if _, err := takeLease(o, "sweep", time.Minute); fault.CodeOf(err) != fault.StoreUnreachable {
			t.Fatalf("a put that fails: %v, want store.unreachable", err)
		}
	})
}

// failingLeases is LeaseObjects whose every PutMeta fails.
type failingLeases struct {
	MapObjects
	err error
}

func (f *failingLeases) PutMeta(context.Context, string, string, []byte, map[string]string) (Object, error) {
	return Object{}, f.err
}
