package daemon

import (
	"context"
	"errors"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// TestEventsWhilePurging: a purge closes the journal while the socket
// still answers. An event stream asked for then ends as streams end at
// a stop (a follower's reconnect finds no daemon), and a one-off read
// says the daemon is stopping, not "internal: DB Closed".
func TestEventsWhilePurging(t *testing.T) {
	td := newTestDaemon(t)
	close(td.d.stopping)
	if err := td.d.j.Close(); err != nil {
		t.Fatal(err)
	}
	emit := func(ctl.Event) error { return nil }
	if err := td.svc().Events(context.Background(), 0, true, emit); err != nil {
		t.Errorf("following: %v, want the stream to end", err)
	}
	err := td.svc().Events(context.Background(), 0, false, emit)
	var ce *ctl.Error
	if !errors.As(err, &ce) || ce.Code != ctl.CodeBusy {
		t.Errorf("reading: %v, want busy", err)
	}
}
