package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/journal/pack"
)

// noAside is a dropAside for tests whose records keep nothing aside.
func noAside(string) error { return nil }

// randomBytes returns n bytes that do not compress, the same for a seed.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n]
}

// addTurn journals a turn whose records hold the given contents (path
// -> bytes), then prunes.
func addTurn(t testing.TB, j *Journal, contents map[string][]byte) {
	t.Helper()
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	g := j.Enter()
	for path, b := range contents {
		if err := j.Append(g, &Record{Kind: KindData, Path: path, Len: int64(len(b))}, bytes.NewReader(b)); err != nil {
			g.Leave()
			t.Fatal(err)
		}
	}
	g.Leave()
	if _, err := j.EndTurn(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := j.Prune(noAside); err != nil {
		t.Fatal(err)
	}
}

// checkRecords restores every data record and compares it with what
// want says its record held.
func checkRecords(t testing.TB, j *Journal, want func(r *Record) []byte) int {
	t.Helper()
	n := 0
	err := j.Scan(0, 0, false, func(r *Record) error {
		if r.Kind != KindData {
			return nil
		}
		var got bytes.Buffer
		if err := j.ReadContent(r, func(off int64, b []byte) error { got.Write(b); return nil }); err != nil {
			return fmt.Errorf("record %d (%s, turn %d): %w", r.Seq, r.Path, r.Turn, err)
		}
		if !bytes.Equal(got.Bytes(), want(r)) {
			return fmt.Errorf("record %d (%s, turn %d) restores other bytes", r.Seq, r.Path, r.Turn)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Content is stored once, however many records, turns and files hold
// it, and each record restores exactly.
func TestDedup(t *testing.T) {
	j := TestJournal(t, Options{Window: 5})
	same := randomBytes(1, 10<<20)
	for i := 0; i < 5; i++ {
		addTurn(t, j, map[string][]byte{"a": same, "b": same})
	}
	ps, _ := j.packs.List()
	var total int64
	for _, size := range ps {
		total += size
	}
	if total > int64(len(same))+1<<20 {
		t.Fatalf("packs hold %d bytes for 10 records of the same %d", total, len(same))
	}
	// An insertion near the start shifts everything after it: only the
	// chunks near it are new.
	shifted := append(append(append([]byte{}, same[:100<<10]...), "inserted"...), same[100<<10:]...)
	g := j.Enter()
	rec := &Record{Kind: KindData, Path: "c", Len: int64(len(shifted))}
	if err := j.Append(g, rec, bytes.NewReader(shifted)); err != nil {
		t.Fatal(err)
	}
	g.Leave()
	if rec.Stored > 2*pack.ChunkSize {
		t.Fatalf("a shifted copy stored %d new bytes", rec.Stored)
	}
	n := checkRecords(t, j, func(r *Record) []byte {
		if r.Path == "c" {
			return shifted
		}
		return same
	})
	if n != 11 {
		t.Fatalf("%d records", n)
	}
}

// Packs no record needs are deleted as turns leave the window; packs
// partly needed are repacked; every record left restores exactly.
func TestReclaim(t *testing.T) {
	j := TestJournal(t, Options{Window: 3})
	shared := randomBytes(0, 2<<20)
	want := func(r *Record) []byte {
		if r.Path == "shared" {
			return shared
		}
		return randomBytes(r.Turn, 3<<20)
	}
	for turn := uint64(1); turn <= 20; turn++ {
		addTurn(t, j, map[string][]byte{"shared": shared, "u": randomBytes(turn, 3<<20)})
		need := int64(len(shared) + 3*(3<<20))
		if size := j.Size(); size > need*3/2+4<<20 {
			t.Fatalf("turn %d: journal takes %d bytes, the window needs %d", turn, size, need)
		}
	}
	if n := checkRecords(t, j, want); n != 6 {
		t.Fatalf("%d records", n)
	}
	// The shared chunks were written in turn 1's pack, which had to be
	// repacked when turn 1 left.
	ps, _ := j.packs.List()
	if _, ok := ps[1]; ok {
		t.Fatalf("pack 1 is still there: %v", ps)
	}
}

// A reclaim killed at any step leaves a journal that opens, restores
// every record exactly, and gives the space back at the next prune.
func TestReclaimKilled(t *testing.T) {
	for _, step := range []string{"copying", "copied", "switched"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			j, err := Open(dir, Options{Window: 3})
			if err != nil {
				t.Fatal(err)
			}
			shared := randomBytes(0, 2<<20)
			for turn := uint64(1); turn <= 3; turn++ {
				addTurn(t, j, map[string][]byte{"shared": shared, "u": randomBytes(turn, 3<<20)})
			}
			j.Close()

			// A child opens it with a window of 2: turn 1 leaves, and
			// its pack, which holds the shared chunks too, is repacked.
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "COWFS_RECLAIM_CHILD="+dir, "COWFS_RECLAIM_KILL="+step)
			out, err := cmd.CombinedOutput()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child was not killed at %s: %v\n%s", step, err, out)
			}

			j, err = Open(dir, Options{Window: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			want := func(r *Record) []byte {
				if r.Path == "shared" {
					return shared
				}
				return randomBytes(r.Turn, 3<<20)
			}
			checkRecords(t, j, want)
			if err := j.Prune(noAside); err != nil {
				t.Fatal(err)
			}
			if n := checkRecords(t, j, want); n != 4 {
				t.Fatalf("%d records after the prune", n)
			}
			if ps, _ := j.packs.List(); ps[1] != 0 {
				t.Fatalf("the repacked pack is still there: %v", ps)
			}
			if size, need := j.Size(), int64(2<<20+2*(3<<20)); size > need*3/2+4<<20 {
				t.Fatalf("journal takes %d bytes after the prune, the window needs %d", size, need)
			}
		})
	}
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("COWFS_RECLAIM_CHILD"); dir != "" {
		reclaimKilledChild(dir, os.Getenv("COWFS_RECLAIM_KILL"))
	}
	os.Exit(m.Run())
}

// reclaimKilledChild is the process TestReclaimKilled kills: it opens
// the journal with a window of 2 and prunes, and kills itself at step.
func reclaimKilledChild(dir, step string) {
	testHookReclaim = func(s string) {
		if s == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	j, err := Open(dir, Options{Window: 2})
	if err == nil {
		err = j.Prune(noAside)
	}
	fmt.Println("the reclaim ended without reaching", step, err)
	os.Exit(1)
}

// prunedEvents returns the turn_pruned events journaled, in order.
func prunedEvents(t testing.TB, j *Journal) []prunedEvent {
	t.Helper()
	var out []prunedEvent
	err := j.Scan(0, 0, false, func(r *Record) error {
		if r.Kind == KindEvent && r.Path == EventTurnPruned {
			var p prunedEvent
			if err := json.Unmarshal(r.Detail, &p); err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Past the size bound, the oldest turns leave the window early, oldest
// first, each reported; a record that does not fit even then is refused
// with ENOSPC, and the open turn stays.
func TestMaxSize(t *testing.T) {
	const mib = 1 << 20
	j := TestJournal(t, Options{Window: 10, MaxSize: 24 * mib, Reserve: 1})
	j.SetDropAside(noAside)
	for turn := uint64(1); turn <= 8; turn++ {
		addTurn(t, j, map[string][]byte{"u": randomBytes(turn, 4*mib)})
		if size := j.Size(); size > 24*mib {
			t.Fatalf("turn %d: journal takes %d bytes, over its bound", turn, size)
		}
	}
	ts, _ := j.Turns()
	if len(ts) >= 8 || len(ts) < 3 || ts[len(ts)-1].Num != 8 {
		t.Fatalf("turns in the window: %+v", ts)
	}
	t.Logf("turns %d to %d in the window, journal %d bytes", ts[0].Num, ts[len(ts)-1].Num, j.Size())
	ev := prunedEvents(t, j)
	if len(ev) != int(ts[0].Num-1) {
		t.Fatalf("%d turn_pruned events for %d turns gone", len(ev), ts[0].Num-1)
	}
	for i, e := range ev {
		if e.Turn != uint64(i+1) || e.Reason != PruneMaxSize {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	if e, ok := j.LastEarlyPrune(); !ok || e.Through != ts[0].Num-1 || e.Reason != PruneMaxSize {
		t.Fatalf("last early prune: %+v %v", e, ok)
	}
	checkRecords(t, j, func(r *Record) []byte { return randomBytes(r.Turn, 4*mib) })

	// A pre-image larger than the bound is refused at once: no turn
	// leaves for it.
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	before, _ := j.Turns()
	g := j.Enter()
	err := j.Append(g, &Record{Kind: KindData, Path: "huge", Len: 30 * mib}, bytes.NewReader(randomBytes(99, 30*mib)))
	g.Leave()
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append over the bound: %v", err)
	}
	if ts, _ = j.Turns(); len(ts) != len(before) {
		t.Fatalf("turns left: %+v", ts)
	}
	// One that fits once every older turn is gone: they go, it fits.
	g = j.Enter()
	err = j.Append(g, &Record{Kind: KindData, Path: "large", Len: 20 * mib}, bytes.NewReader(randomBytes(98, 20*mib)))
	g.Leave()
	if err != nil {
		t.Fatal(err)
	}
	if ts, _ = j.Turns(); len(ts) != 1 || !ts[0].Open() {
		t.Fatalf("turns left: %+v", ts)
	}
	// Small records still fit.
	g = j.Enter()
	err = j.Append(g, &Record{Kind: KindCreate, Path: "small"}, nil)
	g.Leave()
	if err != nil {
		t.Fatal(err)
	}
}
