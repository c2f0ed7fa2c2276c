package stage

import "sync"

// Ordered runs work on every item that next yields, with up to jobs items at once, and hands the
// results to emit in the order next yielded them. At most 4*jobs items are taken and not yet
// emitted, so memory is bounded whatever the input's length. next returns ok=false at the end, or
// an error that stops the pool: items already taken are still worked and emitted, then Ordered
// returns that error. An error from emit stops the pool too.
//
// There is no dispatcher: each worker takes its next item itself (next is never called by two
// workers at once), works it, and the worker that completes the oldest outstanding item emits it
// and every completed item after it. Small items (sniffing a 1 KiB file) cost a few mutex
// operations each, not several goroutine hand-offs. emit is never called by two workers at once.
func Ordered[T, U any](jobs int, next func() (T, bool, error), work func(T) U, emit func(U) error) error {
	return OrderedWindow(jobs, 0, next, work, emit)
}

// OrderedWindow is Ordered with at most window items taken and not yet emitted (at least
// 4*jobs): a stage that publishes its results in batches when they are emitted (upload) takes a
// window as large as its batch.
func OrderedWindow[T, U any](jobs, items int, next func() (T, bool, error), work func(T) U, emit func(U) error) error {
	if jobs < 1 {
		jobs = 1
	}
	window := uint64(max(items, 4*jobs))
	var (
		takeMu   sync.Mutex // serialises next
		mu       sync.Mutex // guards everything below
		room     = sync.NewCond(&mu)
		taken    uint64 // items taken so far: the next item's sequence number
		emitted  uint64 // items emitted so far: the sequence number emit waits for
		ring     = make([]U, window)
		ready    = make([]bool, window)
		emitting bool
		done     bool // no more items are to be taken
		readErr  error
		emitErr  error
	)
	// take returns the next item and its sequence number, or ok=false when the pool is done.
	take := func() (T, uint64, bool) {
		var zero T
		takeMu.Lock()
		defer takeMu.Unlock()
		mu.Lock()
		for !done && taken-emitted >= window {
			room.Wait()
		}
		stop := done
		mu.Unlock()
		if stop {
			return zero, 0, false
		}
		item, ok, err := next()
		mu.Lock()
		defer mu.Unlock()
		if err != nil || !ok {
			done, readErr = true, err
			room.Broadcast()
			return zero, 0, false
		}
		seq := taken
		taken++
		return item, seq, true
	}
	// deliver stores a result and, unless another worker is emitting, emits every result that is
	// next in order.
	deliver := func(seq uint64, out U) {
		mu.Lock()
		defer mu.Unlock()
		ring[seq%window], ready[seq%window] = out, true
		if emitting {
			return // the emitting worker will find it
		}
		emitting = true
		for ready[emitted%window] {
			i := emitted % window
			o := ring[i]
			var zero U
			ring[i], ready[i] = zero, false
			emitted++
			if emitErr == nil {
				mu.Unlock()
				err := emit(o)
				mu.Lock()
				if err != nil {
					emitErr, done = err, true
				}
			}
			room.Broadcast()
		}
		emitting = false
	}
	var wg sync.WaitGroup
	for i := 0; i < jobs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, seq, ok := take()
				if !ok {
					return
				}
				deliver(seq, work(item))
			}
		}()
	}
	wg.Wait()
	if emitErr != nil {
		return emitErr
	}
	return readErr
}
