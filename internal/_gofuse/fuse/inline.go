// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fuse

import (
	"sync"
	"time"
)

// Inline dispatch (MountOptions.ServeInline).
//
// One goroutine, the reader, reads a request and serves it before it
// reads the next: no other goroutine is woken for the request, and no
// spare reader waits on the device. This is how libfuse's
// single-threaded loop works, without its drawback that one slow
// request stalls the mount: every request the reader serves arms a
// timer, and if the request is still running when it fires, the timer
// gives the reader role to a new goroutine (handOff), which goes on
// reading. The old goroutine finishes its request and exits.
//
// Why this cannot deadlock. At every moment the reader role is held by
// exactly one goroutine, which is either blocked reading the device or
// serving a request with its timer armed. So a request the kernel
// queues is read at the latest InlineHandoff after the request before
// it started, however that one ends. A request that waits for another
// (a lock held across requests, a kernel lock held by a process waiting
// on this mount) therefore waits no longer than it would with a reader
// per request: the request it waits for is read and served by a later
// reader. Readers are not pooled, so no bound on their number can be
// exhausted.
//
// The timer costs a reset and a stop per request, and no goroutine
// unless it fires. The runtime does wake, about once per InlineHandoff
// while requests keep the reader busy, to find the timer stopped: a
// longer InlineHandoff makes that rarer, at the price of a longer wait
// for the requests queued behind a blocked one.
//
// MaxInflightRequestBytes still bounds the requests in flight: a
// reader that may not read more leaves the role vacant, and the next
// goroutine to finish a request it handed off takes it back; if none
// is left, the requests they held are done, so reading can go on.
type inlineDispatch struct {
	mu sync.Mutex
	// serving is the reader while it serves a request it has not
	// handed off; nil while the reader reads the device.
	serving *inlineReader
	// away counts goroutines serving a request they handed off.
	away int
	// vacant: no goroutine holds the reader role (outOfBudget).
	vacant bool
}

// inlineReader is the per-goroutine state of a reading loop.
type inlineReader struct {
	timer *time.Timer
}

const defaultInlineHandoff = time.Millisecond

// serveInline serves req on the calling goroutine, the reader r. It
// reports whether r is still the reader afterwards; if not, another
// goroutine took over reading while req ran, and r must stop.
func (ms *Server) serveInline(r *inlineReader, req *requestAlloc) bool {
	d := &ms.inline
	d.mu.Lock()
	d.serving = r
	d.mu.Unlock()

	delay := ms.opts.InlineHandoff
	if delay <= 0 {
		delay = defaultInlineHandoff
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(delay, func() { ms.handOff(r) })
	} else {
		r.timer.Reset(delay)
	}
	ms.handleRequest(req)
	r.timer.Stop()

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.serving == r {
		d.serving = nil
		return true
	}
	d.away--
	if d.vacant {
		d.vacant = false
		return true
	}
	return false
}

// outOfBudget is called by the reader when MaxInflightRequestBytes
// keeps it from reading. It reports whether to try again: true if no
// handed-off request is in flight any more (each frees its bytes before
// it is counted out of away, so the budget is free), else false, and
// the role is left to the next such request to finish.
func (ms *Server) outOfBudget() (retry bool) {
	d := &ms.inline
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.away == 0 {
		return true
	}
	d.vacant = true
	return false
}

// handOff starts a new reader if r is still serving a request as the
// reader. r stays alive until it has seen that it lost the role (under
// mu), so the new loop is counted in loops before r's loop ends.
func (ms *Server) handOff(r *inlineReader) {
	d := &ms.inline
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.serving != r {
		return
	}
	d.serving = nil
	d.away++
	ms.fuseFD.loops.Add(1)
	go ms.loop()
}
