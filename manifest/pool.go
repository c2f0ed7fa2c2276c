package manifest

import "sync"

// Ordered runs work on every item that next yields, with up to jobs items at once, and hands the
// results to emit in the order next yielded them. At most 2*jobs items are in flight, so memory is
// bounded whatever the input's length. next returns ok=false at the end, or an error that stops the
// pool: items already taken are still worked and emitted, then Ordered returns that error. An error
// from emit stops the pool too.
func Ordered[T, U any](jobs int, next func() (T, bool, error), work func(T) U, emit func(U) error) error {
	if jobs < 1 {
		jobs = 1
	}
	type slot struct {
		done chan struct{}
		out  U
	}
	queue := make(chan *slot, 2*jobs) // results in input order
	tasks := make(chan func(), jobs)
	var wg sync.WaitGroup
	for i := 0; i < jobs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				t()
			}
		}()
	}
	var readErr error
	stop := make(chan struct{})
	go func() {
		defer close(queue)
		defer close(tasks)
		for {
			item, ok, err := next()
			if err != nil {
				readErr = err
				return
			}
			if !ok {
				return
			}
			s := &slot{done: make(chan struct{})}
			select {
			case queue <- s:
			case <-stop:
				return
			}
			tasks <- func() { s.out = work(item); close(s.done) }
		}
	}()
	var emitErr error
	for s := range queue {
		<-s.done
		if emitErr == nil {
			if emitErr = emit(s.out); emitErr != nil {
				close(stop)
			}
		}
	}
	wg.Wait()
	if emitErr != nil {
		return emitErr
	}
	return readErr
}
