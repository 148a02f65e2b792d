package ctl

import (
	"context"
	"errors"
	"time"
)

// ErrCertificate: one side of a remote connection did not accept the
// other's certificate. Retrying does not help until a certificate
// changes.
var ErrCertificate = errors.New("certificate refused")

// FollowOptions tune Follow's reconnects; the zero value is the default.
type FollowOptions struct {
	// RetryDelay is the first wait before reconnecting (default 50ms);
	// it doubles up to MaxRetryDelay (default 2s).
	RetryDelay, MaxRetryDelay time.Duration
	// OnReconnect, if set, is called each time the stream was lost and
	// is about to be opened again after since, with why (nil: the
	// stream ended, as when the daemon stops).
	OnReconnect func(since uint64, err error)
}

// maxInternalRetries bounds the internal errors in a row Follow takes
// for a daemon on its way out (one that closed its journal may still
// answer a connection) before it returns the error.
const maxInternalRetries = 8

// Follow calls fn for every event after since, in order, and goes on
// across the stream's ends: when the daemon stops or restarts, or the
// connection (a socket's, or a remote one over TLS) breaks, it connects
// again, with backoff, and asks for the events after the last seq it
// passed to fn. Seqs only grow, the journal keeping them across
// restarts, so nothing still in the window is lost and an event at or
// below the last seq passed on is a repeat and dropped; a gap event
// says which left the window meanwhile. This is the TypeScript and
// Python clients' reconnecting stream.
//
// It returns when ctx is done (nil), when fn fails (its error), after a
// journal_error event (nil: the journal is unusable until the daemon
// restarts), or on an error that retrying cannot mend: a request the
// daemon refuses, a foreign socket, a certificate refused.
func (c *Client) Follow(ctx context.Context, since uint64, opts FollowOptions, fn func(Event) error) error {
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = 50 * time.Millisecond
	}
	if opts.MaxRetryDelay < opts.RetryDelay {
		opts.MaxRetryDelay = max(2*time.Second, opts.RetryDelay)
	}
	last := since
	delay := opts.RetryDelay
	internal := 0
	for {
		var fnErr error
		ended := false
		err := c.Events(ctx, last, true, func(e Event) error {
			delay, internal = opts.RetryDelay, 0
			switch {
			case e.Type == EventGap:
				last = max(last, e.Seq)
			case e.Type == EventJournalError:
				ended = true
			case e.Seq <= last:
				return nil // seen before a reconnect
			default:
				last = e.Seq
			}
			if fnErr = fn(e); fnErr != nil {
				return fnErr
			}
			if ended {
				return errJournalGone
			}
			return nil
		})
		switch {
		case fnErr != nil:
			return fnErr
		case ended || ctx.Err() != nil:
			return nil
		case err != nil && !retryable(err):
			return err
		}
		var e *Error
		if errors.As(err, &e) && e.Code == CodeInternal {
			if internal++; internal > maxInternalRetries {
				return err
			}
		}
		if opts.OnReconnect != nil {
			opts.OnReconnect(last, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, opts.MaxRetryDelay)
	}
}

// errJournalGone ends Events after a journal_error event.
var errJournalGone = errors.New("the journal is unusable")

// retryable says whether a failed stream may work when tried again.
func retryable(err error) bool {
	var e *Error
	switch {
	case errors.Is(err, ErrForeignServer), errors.Is(err, ErrCertificate), errors.Is(err, ErrTLSDir):
		return false
	case errors.As(err, &e):
		// The daemon answered: only its being busy or on its way out
		// may pass.
		return e.Code == CodeInternal || e.Code == CodeBusy
	}
	return true
}
