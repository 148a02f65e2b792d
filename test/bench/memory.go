package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// The memory suite: the daemon's peak resident set (VmHWM) through the
// workloads issue #15 bounds at 128 MiB, each in a workspace and a
// daemon of its own. The peak is reset (clear_refs) before each phase,
// so each row is what that phase alone needed.
const (
	suiteMemory = "memory"
	mPeak       = "peak RSS"
	mPhaseTime  = "time"

	memBound = 128 // MiB
)

// memPhase is one measured step of a scenario.
type memPhase struct {
	name string
	run  func() error
}

func memorySuite(c *config, r *results) error {
	files := 100_000
	turnFiles := 50_000
	big := 1 << 30
	if c.quick {
		files, turnFiles, big = 20_000, 10_000, 256<<20
	}
	scenarios := []struct {
		name    string
		prepare func(ws string) error // natively, before the mount
		phases  func(m *memMount) []memPhase
	}{
		{fmt.Sprintf("%dk-file workspace", files/1000),
			func(ws string) error { return makeWorkspace(ws, files) },
			func(m *memMount) []memPhase {
				return []memPhase{
					{"walk and read every file", func() error { return readTree(m.mnt) }},
					{"a 10-file turn, rolled back", func() error {
						return m.turn(func() error { return edit(m.mnt, 1) }, true)
					}},
				}
			}},
		{fmt.Sprintf("%d MiB file", big>>20),
			func(ws string) error { return writeFile(filepath.Join(ws, "old.bin"), big) },
			func(m *memMount) []memPhase {
				return []memPhase{
					{"written new in a turn", func() error {
						return m.turn(func() error { return writeFile(filepath.Join(m.mnt, "new.bin"), big) }, false)
					}},
					{"overwritten in a turn, rolled back", func() error {
						return m.turn(func() error { return writeFile(filepath.Join(m.mnt, "old.bin"), big) }, true)
					}},
				}
			}},
		{fmt.Sprintf("%dk-file turn", turnFiles/1000), nil,
			func(m *memMount) []memPhase {
				return []memPhase{
					{"created (trees with renames inside)", func() error {
						return m.open(func() error { return createTrees(m.mnt, turnFiles) })
					}},
					{"turn end", m.end},
					{"rolled back", m.rollback},
				}
			}},
		{fmt.Sprintf("%dk random writes", 3*turnFiles/1000),
			func(ws string) error { return writeFile(filepath.Join(ws, "db.bin"), big) },
			func(m *memMount) []memPhase {
				return []memPhase{
					{"4 KiB each into one file, as a database writes", func() error {
						return m.open(func() error { return randomWrites(filepath.Join(m.mnt, "db.bin"), big, 3*turnFiles) })
					}},
					{"turn end", m.end},
					{"rolled back", m.rollback},
				}
			}},
		{"stacked undos", nil,
			func(m *memMount) []memPhase {
				var turns []ctl.Turn
				return []memPhase{
					{"40 turns of sed -i over 1,000 files", func() error {
						if err := m.sedFiles(1000); err != nil {
							return err
						}
						for k := 0; k < 40; k++ {
							t, err := sedTurn(m.cl, m.mnt, k)
							if err != nil {
								return err
							}
							turns = append(turns, t)
						}
						return nil
					}},
					{"the window walked back, one undo at a time", func() error {
						_, _, err := undoBack(m.cl, turns[len(turns)-10:])
						return err
					}},
				}
			}},
		{fmt.Sprintf("%dk-event turn", 3*turnFiles/1000),
			func(ws string) error { return makeWorkspace(ws, turnFiles) },
			func(m *memMount) []memPhase {
				return []memPhase{
					{"each file rewritten and renamed", func() error {
						return m.open(func() error { return rewriteAndRename(m.mnt) })
					}},
					{"turn end", m.end},
					{"rolled back", m.rollback},
				}
			}},
		{fmt.Sprintf("%dk-record turn", 2*turnFiles/1000),
			func(ws string) error { return makeWorkspace(ws, turnFiles) },
			func(m *memMount) []memPhase {
				return []memPhase{
					{"each file rewritten", func() error {
						return m.open(func() error { return rewrite(m.mnt) })
					}},
					{"turn end", m.end},
					{"diff --stat", func() error { return m.diff(turnFiles, true) }},
					{"diff", func() error { return m.diff(turnFiles, false) }},
				}
			}},
	}
	for _, sc := range scenarios {
		if !strings.Contains(sc.name, c.scenario) {
			continue
		}
		fmt.Printf("memory: %s\n", sc.name)
		base := filepath.Join(c.work, "memory")
		ws := filepath.Join(base, "ws")
		os.RemoveAll(base)
		os.MkdirAll(ws, 0o755)
		if sc.prepare != nil {
			if err := sc.prepare(ws); err != nil {
				return err
			}
		}
		m, err := newMemMount(c, base, ws)
		if err != nil {
			return err
		}
		err = m.measure(r, sc.name, sc.phases(m))
		m.cw.teardown()
		os.RemoveAll(base)
		if err != nil {
			return fmt.Errorf("memory: %s: %w", sc.name, err)
		}
	}
	if !strings.Contains(diskFullName, c.scenario) {
		return nil
	}
	return diskFull(c, r)
}

// memMount is a mounted workspace whose daemon's memory is measured.
type memMount struct {
	cw  *cowfs
	cl  *ctl.Client
	mnt string
	pid int
	num uint64 // the last turn begun
}

func newMemMount(c *config, base, ws string) (*memMount, error) {
	cw, cl, err := mountAt(c, base, ws)
	if err != nil {
		return nil, err
	}
	st, err := cl.Status(context.Background())
	if err != nil {
		cw.teardown()
		return nil, err
	}
	return &memMount{cw: cw, cl: cl, mnt: cw.mnt, pid: st.Pid}, nil
}

// measure runs the phases, recording each one's peak RSS and time.
func (m *memMount) measure(r *results, scenario string, phases []memPhase) error {
	for _, ph := range phases {
		// "5" resets the peak resident set (proc(5), clear_refs).
		os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", m.pid), []byte("5"), 0)
		// Reset, the peak is the resident set now: what the phase
		// starts from (the heap earlier phases left, not yet returned).
		base := float64(peakRSS(m.pid)) / (1 << 20)
		start := time.Now()
		if err := ph.run(); err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
		w := scenario + ": " + ph.name
		peak, d := float64(peakRSS(m.pid))/(1<<20), time.Since(start)
		fmt.Printf("  %s: peak %.0f MiB (%.0f at its start), %s\n", ph.name, peak, base, seconds(d.Seconds()))
		r.add(suiteMemory, w, mPeak, 1, peak, "MiB")
		r.add(suiteMemory, w, mPhaseTime, 1, d.Seconds(), "s")
	}
	return nil
}

// sedFiles writes n files for sedTurn to rewrite, outside any turn.
func (m *memMount) sedFiles(n int) error {
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(m.mnt, fmt.Sprintf("f%04d.txt", i)), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// open begins a turn and runs work in it, leaving it open.
func (m *memMount) open(work func() error) error {
	t, err := m.cl.BeginTurn(context.Background(), ctl.BeginTurnRequest{})
	if err != nil {
		return err
	}
	m.num = t.Num
	return work()
}

func (m *memMount) end() error {
	_, err := m.cl.EndTurn(context.Background())
	return err
}

// rollback rolls back to before the last turn begun, which must skip
// nothing.
func (m *memMount) rollback() error {
	res, err := m.cl.Rollback(context.Background(), ctl.RollbackRequest{To: ctl.TurnRef(fmt.Sprint(m.num))})
	if err != nil {
		return err
	}
	if res.Counts.Skipped != 0 || !res.Complete {
		return fmt.Errorf("rollback skipped %d paths (complete: %v)", res.Counts.Skipped, res.Complete)
	}
	return nil
}

// diff asks for the diff of the last turn begun, which must name n
// files: what cowfs diff (--stat) shows.
func (m *memMount) diff(n int, stat bool) error {
	d, err := m.cl.Diff(context.Background(), ctl.DiffRequest{From: ctl.TurnRef(fmt.Sprint(m.num)), Stat: stat})
	if err != nil {
		return err
	}
	if len(d.Files) != n {
		return fmt.Errorf("the diff names %d files, not %d", len(d.Files), n)
	}
	return nil
}

// turn runs work in one turn and, if back, rolls it back.
func (m *memMount) turn(work func() error, back bool) error {
	if err := m.open(work); err != nil {
		return err
	}
	if err := m.end(); err != nil {
		return err
	}
	if back {
		return m.rollback()
	}
	return nil
}

// readTree stats and reads every file beneath root, as a search or a
// build does: the kernel then knows every inode.
func readTree(root string) error {
	buf := make([]byte, 64<<10)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyBuffer(io.Discard, f, buf)
		return err
	})
}

// writeFile writes n bytes of a repeating, incompressible-enough
// pattern to p in 1 MiB writes.
func writeFile(p string, n int) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i*7 + i>>9)
	}
	for off := 0; off < n; off += len(block) {
		block[0], block[1] = byte(off>>20), byte(off>>28)
		if _, err := f.Write(block); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// createTrees creates n files in trees of 1,000, each made under a
// temporary name with a directory renamed inside it, then renamed into
// place, as package managers and build tools do.
func createTrees(root string, n int) error {
	body := bytes.Repeat([]byte("x"), 100)
	for t := 0; t < n/1000; t++ {
		tmp := filepath.Join(root, fmt.Sprintf("t%03d.tmp", t))
		for s := 0; s < 10; s++ {
			dir := filepath.Join(tmp, fmt.Sprintf("s%d", s))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			for i := 0; i < 100; i++ {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), body, 0o644); err != nil {
					return err
				}
			}
		}
		if err := os.Rename(filepath.Join(tmp, "s0"), filepath.Join(tmp, "s0r")); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(root, fmt.Sprintf("t%03d", t))); err != nil {
			return err
		}
	}
	return nil
}

// randomWrites makes n writes of 4 KiB at random 4 KiB-aligned places
// in the file p of size bytes: a data record each, mostly.
func randomWrites(p string, size, n int) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	block := bytes.Repeat([]byte{'w'}, 4096)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < n; i++ {
		if _, err := f.WriteAt(block, rng.Int64N(int64(size/4096))*4096); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// rewrite overwrites every file beneath root: a data and an attribute
// record each.
func rewrite(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		return os.WriteFile(p, []byte("rewritten\n"), 0o644)
	})
}

// rewriteAndRename overwrites every file beneath root (a data and an
// attribute record each) and renames it (a third).
func rewriteAndRename(root string) error {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := os.WriteFile(p, []byte("rewritten\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(p, p+".moved"); err != nil {
			return err
		}
	}
	return nil
}

// diskFull measures the daemon while the workspace's filesystem (a
// 64 MiB tmpfs) is full: writes fail with ENOSPC, and the turn that
// filled it rolls back.
const diskFullName = "full workspace filesystem"

func diskFull(c *config, r *results) error {
	fmt.Println("memory: " + diskFullName)
	base := filepath.Join(c.work, "memory")
	ws := filepath.Join(base, "ws")
	os.RemoveAll(base)
	os.MkdirAll(ws, 0o755)
	defer os.RemoveAll(base)
	if err := syscall.Mount("tmpfs", ws, "tmpfs", 0, "size=64m"); err != nil {
		return fmt.Errorf("tmpfs for the full workspace: %w", err)
	}
	defer syscall.Unmount(ws, syscall.MNT_DETACH)
	if err := writeFile(filepath.Join(ws, "old.bin"), 16<<20); err != nil {
		return err
	}
	m, err := newMemMount(c, base, ws)
	if err != nil {
		return err
	}
	defer m.cw.teardown()
	return m.measure(r, "64 MiB workspace filesystem", []memPhase{
		{"filled until ENOSPC, rolled back", func() error {
			return m.turn(func() error {
				if err := writeFile(filepath.Join(m.mnt, "old.bin"), 16<<20); err != nil {
					return err
				}
				err := writeFile(filepath.Join(m.mnt, "fill"), 256<<20)
				if err == nil {
					return fmt.Errorf("256 MiB fit in a 64 MiB filesystem")
				}
				return nil
			}, true)
		}},
	})
}
