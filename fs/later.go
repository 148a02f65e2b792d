package fs

import (
	"sync"
	"time"
)

// Work a FUSE callback must not wait for and that need not happen at
// once: closing a forgotten node's descriptor, freeing an aside entry
// nothing uses any more. A goroutine for each (apart) woke a runtime
// thread for each, thousands in an untar, a git commit or an rm -rf,
// where waking a thread is one of the dearest things a request does.
// Instead the work queues, and one goroutine runs what has queued
// laterDelay after the first of a batch: a burst of forgotten nodes
// costs one wake-up.

const laterDelay = 5 * time.Millisecond

// laterQueue is the work waiting for the next batch.
type laterQueue struct {
	mu    sync.Mutex
	work  []func()
	armed bool // a batch is due
}

// later runs fn apart, in the next batch. Like apart, the batch is
// joined before the mount's descriptors close.
func (fs *filesystem) later(fn func()) {
	q := &fs.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	q.work = append(q.work, fn)
	if q.armed {
		return
	}
	q.armed = true
	fs.bg.Add(1)
	time.AfterFunc(laterDelay, func() {
		defer fs.bg.Done()
		q.mu.Lock()
		work := q.work
		q.work, q.armed = nil, false
		q.mu.Unlock()
		for _, fn := range work {
			fn()
		}
	})
}
