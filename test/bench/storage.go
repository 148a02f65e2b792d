package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// Workloads of the storage suite: what a turn costs the journal, how
// long it takes, and how long undoing it takes.
const (
	suiteStorage = "storage"
	sAppend      = "append 16 MiB to a %d MiB file"
	sRandom      = "100 random 4 KiB writes into it"
	sRewrite     = "100 MiB file rewritten, 1% changed"
	sUnchanged   = "10 MiB file rewritten unchanged"
	sRmTree      = "rm -rf a 10k-file tree"

	mJournal  = "journal/turn"
	mTime     = "time/turn"
	mRollback = "rollback"
)

// curvePoint is the journal after one turn of the churn workload.
type curvePoint struct {
	Turn    int   `json:"turn"`
	Journal int64 `json:"journal_bytes"` // on disk
	Content int64 `json:"content_bytes"` // compressed content the window needs
	Window  int64 `json:"window_bytes"`  // what the window's turns added
}

// storageSuite measures the journal through a real mount: the cost per
// turn of the workloads of issue #12, and the journal's size after each
// of many turns of churn.
func storageSuite(c *config, r *results) error {
	base := filepath.Join(c.work, "storage")
	ws := filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	rng := rand.New(rand.NewPCG(12, 12))
	fmt.Println("storage: preparing files")
	big := randomData(rng, c.fileMiB<<20)
	hundred := randomData(rng, 100<<20)
	ten := randomData(rng, 10<<20)
	for name, b := range map[string][]byte{"big.bin": big, "hundred.bin": hundred, "ten.bin": ten} {
		if err := os.WriteFile(filepath.Join(ws, name), b, 0o644); err != nil {
			return err
		}
	}
	big = nil
	cw, cl, err := mountAt(c, base, ws)
	if err != nil {
		return err
	}
	defer cw.teardown()
	s := &storage{c: c, r: r, cl: cl, mnt: cw.mnt, rng: rng, runs: max(c.runs, 5)}
	r.StorageRuns = s.runs
	p := func(name string) string { return filepath.Join(cw.mnt, name) }

	err = s.workload(fmt.Sprintf(sAppend, c.fileMiB), nil, func() error {
		f, err := os.OpenFile(p("big.bin"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write(randomData(s.rng, 16<<20))
		return err
	}, nil)
	if err != nil {
		return err
	}
	err = s.workload(sRandom, nil, func() error {
		f, err := os.OpenFile(p("big.bin"), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		for i := 0; i < 100; i++ {
			off := s.rng.Int64N(int64(c.fileMiB)<<20/4096) * 4096
			if _, err := f.WriteAt(randomData(s.rng, 4096), off); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	var before []byte // hundred.bin before the last turn
	err = s.workload(sRewrite, nil, func() error {
		before = bytes.Clone(hundred)
		for i := 0; i < 10; i++ { // 10 places, 1% in all
			n := len(hundred) / 1000
			off := s.rng.IntN(len(hundred) - n)
			copy(hundred[off:], randomData(s.rng, n))
		}
		return os.WriteFile(p("hundred.bin"), hundred, 0o644)
	}, func() error { return sameContent(p("hundred.bin"), before) })
	if err != nil {
		return err
	}
	err = s.workload(sUnchanged, nil, func() error {
		return os.WriteFile(p("ten.bin"), ten, 0o644)
	}, func() error { return sameContent(p("ten.bin"), ten) })
	if err != nil {
		return err
	}
	err = s.workload(sRmTree, func() error {
		return makeWorkspace(p("tree"), 10000)
	}, func() error {
		return exec.Command("rm", "-rf", p("tree")).Run()
	}, func() error {
		_, err := os.Stat(p("tree/d000/e99/f009999.txt"))
		return err
	})
	if err != nil {
		return err
	}
	cw.teardown()
	os.RemoveAll(base)
	return churn(c, r, filepath.Join(c.work, "churn"))
}

// mountAt mounts the workspace ws with its state in base, at base/view,
// with the mount's extra flags.
func mountAt(c *config, base, ws string, flags ...string) (*cowfs, *ctl.Client, error) {
	cw := &cowfs{bin: c.cowfs, state: filepath.Join(base, "state"), mnt: filepath.Join(base, "view")}
	os.MkdirAll(cw.mnt, 0o755)
	args := append(append([]string{"mount", "--background", "--mountpoint", cw.mnt}, flags...), ws)
	if _, err := cw.run(args...); err != nil {
		return nil, nil, err
	}
	out, err := cw.run("-w", cw.mnt, "status", "--json")
	if err != nil {
		cw.teardown()
		return nil, nil, err
	}
	var st ctl.Status
	json.Unmarshal(out, &st)
	return cw, ctl.NewClient(st.Socket), nil
}

type storage struct {
	c    *config
	r    *results
	cl   *ctl.Client
	mnt  string
	rng  *rand.Rand
	runs int
}

// workload runs work in s.runs turns, each after prepare (outside a
// turn) if given, recording what each turn added to the journal and how
// long work took; then rolls the last turn back s.runs times (undoing
// each rollback in between), checking the result with check.
func (s *storage) workload(name string, prepare, work, check func() error) error {
	fmt.Printf("storage: %s\n", name)
	ctx := context.Background()
	var last ctl.Turn
	for run := 1; run <= s.runs; run++ {
		if prepare != nil {
			if err := prepare(); err != nil {
				return err
			}
		}
		t, err := s.cl.BeginTurn(ctx, ctl.BeginTurnRequest{})
		if err != nil {
			return err
		}
		start := time.Now()
		if err := work(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		d := time.Since(start)
		if last, err = s.cl.EndTurn(ctx); err != nil {
			return err
		}
		last.Num = t.Num
		s.r.add(suiteStorage, name, mJournal, run, float64(last.JournalBytes)/1024, "KiB")
		s.r.add(suiteStorage, name, mTime, run, d.Seconds(), "s")
	}
	for run := 1; run <= s.runs; run++ {
		if run > 1 {
			if _, err := s.cl.Unrevert(ctx, ctl.UnrevertRequest{}); err != nil {
				return err
			}
		}
		start := time.Now()
		res, err := s.cl.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(fmt.Sprint(last.Num))})
		if err != nil {
			return err
		}
		d := time.Since(start)
		if res.Counts.Skipped != 0 {
			return fmt.Errorf("%s: rollback skipped %d paths", name, res.Counts.Skipped)
		}
		if check != nil {
			if err := check(); err != nil {
				return fmt.Errorf("%s: after rollback: %w", name, err)
			}
		}
		s.r.add(suiteStorage, name, mRollback, run, d.Seconds(), "s")
	}
	return nil
}

// churn runs turns of churn in a workspace of its own — a 100 MiB file
// rewritten with new content, 4 MiB overwritten in a 64 MiB file, 50
// files deleted and 50 created — and records the journal's size after
// each.
func churn(c *config, r *results, base string) error {
	turns := 100
	if c.quick {
		turns = 30
	}
	fmt.Printf("storage: churn, %d turns\n", turns)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(100, 100))
	dir := filepath.Join(base, "ws")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mid := filepath.Join(dir, "mid.bin")
	if err := os.WriteFile(mid, textData(rng, 64<<20), 0o644); err != nil {
		return err
	}
	cw, cl, err := mountAt(c, base, dir)
	if err != nil {
		return err
	}
	defer cw.teardown()
	dir, mid = cw.mnt, filepath.Join(cw.mnt, "mid.bin")
	var added []int64
	for turn := 1; turn <= turns; turn++ {
		if _, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{}); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "hundred.txt"), textData(rng, 100<<20), 0o644); err != nil {
			return err
		}
		f, err := os.OpenFile(mid, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(textData(rng, 4<<20), rng.Int64N(60<<20))
		f.Close()
		if err != nil {
			return err
		}
		for i := 0; i < 50; i++ {
			os.Remove(filepath.Join(dir, fmt.Sprintf("small-%d-%d", turn-1, i)))
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("small-%d-%d", turn, i)), textData(rng, 4096), 0o644); err != nil {
				return err
			}
		}
		t, err := cl.EndTurn(ctx)
		if err != nil {
			return err
		}
		added = append(added, t.JournalBytes)
		st, err := cl.Status(ctx)
		if err != nil {
			return err
		}
		var window int64
		for _, a := range added[max(0, len(added)-st.Window):] {
			window += a
		}
		r.Curve = append(r.Curve, curvePoint{Turn: turn, Journal: st.JournalBytes, Content: st.ContentBytes, Window: window})
	}
	return nil
}

// sameContent fails unless the file at p holds want.
func sameContent(p string, want []byte) error {
	got, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s does not hold what it held before the turn", p)
	}
	return nil
}

// randomData returns n bytes that do not compress.
func randomData(rng *rand.Rand, n int) []byte {
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		b[i+4], b[i+5], b[i+6], b[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
	}
	return b[:n]
}

// textData returns n bytes of words from a small vocabulary: about as
// compressible as source code.
func textData(rng *rand.Rand, n int) []byte {
	words := []string{"func", "return", "err", "nil", "if", "for", "range", "the", "journal", "turn",
		"record", "chunk", "pack", "{", "}", "(", ")", ":=", "=", "\n\t", "\n", "int64", "string", "byte"}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		b = append(b, words[rng.IntN(len(words))]...)
		b = append(b, ' ')
		if rng.IntN(8) == 0 {
			b = fmt.Appendf(b, "%d ", rng.Uint32())
		}
	}
	return b[:n]
}
