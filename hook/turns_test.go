package hook

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

func TestBeginEndsStaleTurnOfTheHooks(t *testing.T) {
	f := &fakeDaemon{}
	tr := Turns{Daemon: f, Prefix: "cc-"}
	ctx := context.Background()
	if _, err := tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-1"}); err != nil {
		t.Fatal(err)
	}
	// No Stop came (SIGINT): the next prompt ends turn 1 first.
	b, err := tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-2"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Ended == nil || b.Ended.Num != 1 || b.Turn.Num != 2 || f.turns[0].State != ctl.StateClosed {
		t.Fatalf("begun %+v, turns %+v", b, f.turns)
	}
}

func TestBeginKeepsTheSamePromptsTurn(t *testing.T) {
	f := &fakeDaemon{}
	tr := Turns{Daemon: f, Prefix: "cc-"}
	ctx := context.Background()
	tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-1"})
	b, err := tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-1"})
	if err != nil || b.Ended != nil || b.Turn.Num != 1 || len(f.turns) != 1 {
		t.Fatalf("begun %+v, %v; turns %+v", b, err, f.turns)
	}
}

func TestBeginRefusesAnotherOpenTurn(t *testing.T) {
	f := &fakeDaemon{}
	ctx := context.Background()
	f.BeginTurn(ctx, ctl.BeginTurnRequest{ID: "harness-7"})
	_, err := Turns{Daemon: f, Prefix: "cc-"}.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-1"})
	if !errors.Is(err, ErrForeignTurn) || !strings.Contains(err.Error(), "cowfs turn end") || !strings.Contains(err.Error(), "harness-7") {
		t.Fatalf("got %v", err)
	}
	if f.turns[0].State != ctl.StateOpen {
		t.Fatal("the other turn was ended")
	}
}

func TestEndLeavesAnotherOpenTurn(t *testing.T) {
	f := &fakeDaemon{}
	ctx := context.Background()
	f.BeginTurn(ctx, ctl.BeginTurnRequest{ID: "by-hand"})
	if _, err := (Turns{Daemon: f, Prefix: "cc-"}).End(ctx); !errors.Is(err, ErrForeignTurn) {
		t.Fatalf("got %v", err)
	}
	if f.open != 1 {
		t.Fatal("the other turn was ended")
	}
}

func TestBeginGivesAUsedIDASuffix(t *testing.T) {
	f := &fakeDaemon{}
	tr := Turns{Daemon: f, Prefix: "cc-"}
	ctx := context.Background()
	tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-1"})
	tr.End(ctx)
	b, err := tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-1"})
	if err != nil || !strings.HasPrefix(b.Turn.ID, "cc-1-") {
		t.Fatalf("begun %+v, %v", b, err)
	}
}

func TestStepAndEndWithoutATurn(t *testing.T) {
	tr := Turns{Daemon: &fakeDaemon{}, Prefix: "cc-"}
	ctx := context.Background()
	if _, err := tr.Step(ctx, "toolu_1", "Bash"); !errors.Is(err, ErrNoTurn) {
		t.Fatalf("step: %v", err)
	}
	if _, err := tr.End(ctx); !errors.Is(err, ErrNoTurn) {
		t.Fatalf("end: %v", err)
	}
}

func TestMarkerNotesAreHandedOnOnce(t *testing.T) {
	f := &fakeDaemon{}
	tr := Turns{Daemon: f, Prefix: "cc-", Delivered: filepath.Join(t.TempDir(), "delivered")}
	ctx := context.Background()
	at := time.Unix(1000, 0)
	f.markers = []ctl.Marker{{Turn: 3, CreatedAt: at, Note: "note 3"}}
	b, err := tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-a"})
	if err != nil || len(b.Notes) != 1 || b.Notes[0] != "note 3" {
		t.Fatalf("first prompt: %+v, %v", b, err)
	}
	tr.End(ctx)
	if b, _ = tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-b"}); len(b.Notes) != 0 {
		t.Fatalf("second prompt heard again: %v", b.Notes)
	}
	tr.End(ctx)
	// Undone and made again, to the same turn: a new marker, a new note.
	f.markers = []ctl.Marker{{Turn: 3, CreatedAt: at.Add(time.Second), Note: "note 3 again"}}
	if b, _ = tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-c"}); len(b.Notes) != 1 || b.Notes[0] != "note 3 again" {
		t.Fatalf("third prompt: %v", b.Notes)
	}
}

func TestSeenMarkersAreNotHandedOn(t *testing.T) {
	f := &fakeDaemon{markers: []ctl.Marker{{Turn: 1, CreatedAt: time.Unix(5, 0), Note: "old"}}}
	tr := Turns{Daemon: f, Prefix: "cc-", Delivered: filepath.Join(t.TempDir(), "delivered")}
	ctx := context.Background()
	if err := tr.Seen(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-a"}); len(b.Notes) != 0 {
		t.Fatalf("heard %v", b.Notes)
	}
}

func TestBeginFailsWithoutADaemon(t *testing.T) {
	f := &fakeDaemon{err: ctl.ErrNotRunning}
	if _, err := (Turns{Daemon: f, Prefix: "cc-"}).Begin(context.Background(), ctl.BeginTurnRequest{ID: "cc-a"}); !errors.Is(err, ctl.ErrNotRunning) {
		t.Fatalf("got %v", err)
	}
}

// TestStepNamedAfterItsTool: a step carries its tool's name, and a name
// the daemon would refuse is left out, not the step.
func TestStepNamedAfterItsTool(t *testing.T) {
	f := &fakeDaemon{}
	tr := Turns{Daemon: f, Prefix: "cc-"}
	ctx := context.Background()
	if _, err := tr.Begin(ctx, ctl.BeginTurnRequest{ID: "cc-1"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Bash", "mcp__x\n", strings.Repeat("x", 300)} {
		if _, err := tr.Step(ctx, "toolu_1", name); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(f.stepNames, ","); got != "Bash,," {
		t.Errorf("step names %q", got)
	}
}
