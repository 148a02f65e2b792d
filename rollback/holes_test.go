package rollback

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/test/testenv"
)

// du is what the files under dir take on disk.
func du(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err == nil && !e.IsDir() && unix.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// nextData is where the data of the file at p next begins at or after
// off (-1: nothing but holes up to its end).
func nextData(t *testing.T, p string, off int64) int64 {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func readAt(t *testing.T, p string, off, n int64) []byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRollbackSparseTail: a turn makes a 350-byte file 4 TiB long
// (truncate -s 4T). Its rollback journals what it cuts off — holes,
// all but a block — in bytes, not terabytes, and completes; the
// unrevert gives back the 4 TiB file, sparse, without writing its
// holes.
func TestRollbackSparseTail(t *testing.T) {
	const big = 4 << 40
	w := newWS(t)
	notes := bytes.Repeat([]byte("a note\n"), 50)
	w.put("notes.txt", string(notes))
	before := w.snapshot()
	t1 := w.turn(func() { w.truncate("notes.txt", big) })

	grown := du(t, w.jdir)
	out := w.rollback(t1, false)
	if !out.Complete || out.Failure != "" {
		t.Fatalf("rollback of a 4 TiB sparse tail: %+v", out)
	}
	wantReport(t, "rollback", out.Report, "notes.txt restore")
	w.same("after the rollback", before)
	if d := du(t, w.jdir) - grown; d > 1<<20 {
		t.Errorf("the rollback grew the journal by %d bytes", d)
	}

	w.unrevert(false)
	st := w.lstat("notes.txt")
	if st.Size != big {
		t.Fatalf("size after the unrevert: %d, want %d", st.Size, int64(big))
	}
	if st.Blocks*512 > 1<<20 {
		t.Errorf("the unreverted file takes %d bytes on disk: its holes were written", st.Blocks*512)
	}
	if got := readAt(t, w.abs("notes.txt"), 0, int64(len(notes))); !bytes.Equal(got, notes) {
		t.Errorf("the first %d bytes after the unrevert: %q", len(notes), got)
	}
	if d := nextData(t, w.abs("notes.txt"), 1<<20); d != -1 {
		t.Errorf("data at %d of the unreverted file, which was all holes", d)
	}
}

// TestRollbackWriteIntoHole: a turn writes 1 MiB into the middle of a
// 16 MiB hole; the rollback makes that a hole again (not zeros on
// disk), and the unrevert puts the bytes back.
func TestRollbackWriteIntoHole(t *testing.T) {
	const hole = 16 << 20
	w := newWS(t)
	head, tail := bytes.Repeat([]byte("h"), 4096), bytes.Repeat([]byte("t"), 4096)
	w.put("db", string(head))
	f, err := os.OpenFile(w.abs("db"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(tail, 4096+hole)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	blocks := w.lstat("db").Blocks
	if d := nextData(t, w.abs("db"), 4096); d != 4096+hole {
		testenv.Skip(t, fmt.Sprintf("the test filesystem keeps no holes (data at %d)", d))
	}
	data := bytes.Repeat([]byte("x"), 1<<20)
	t1 := w.turn(func() { w.write("db", 4096+hole/2, string(data)) })

	out := w.rollback(t1, false)
	if !out.Complete {
		t.Fatalf("rollback: %+v", out)
	}
	if d := nextData(t, w.abs("db"), 4096); d != 4096+hole {
		t.Errorf("after the rollback, data at %d: the hole is not a hole", d)
	}
	if got := w.lstat("db").Blocks; got != blocks {
		t.Errorf("after the rollback the file takes %d blocks, %d before the turn", got, blocks)
	}
	if got := readAt(t, w.abs("db"), 4096+hole/2, 1<<20); !bytes.Equal(got, make([]byte, 1<<20)) {
		t.Errorf("the hole does not read as zeros after the rollback")
	}
	if got := readAt(t, w.abs("db"), 4096+hole, 4096); !bytes.Equal(got, tail) {
		t.Errorf("the data after the hole changed")
	}

	w.unrevert(false)
	if got := readAt(t, w.abs("db"), 4096+hole/2, 1<<20); !bytes.Equal(got, data) {
		t.Errorf("the turn's bytes are not back after the unrevert")
	}
}

// TestMaterializeSparse: an earlier version of a sparse file is made
// with its holes as holes (cat --at, diff, export), not by copying its
// zeros.
func TestMaterializeSparse(t *testing.T) {
	const size = 256 << 20
	w := newWS(t)
	w.put("s", "start")
	t1 := w.turn(func() { w.truncate("s", size) })
	t2 := w.turn(func() { w.write("s", 100, "changed") })
	for _, c := range []struct {
		turn uint64
		size int64
		head string
	}{{t1.Num, 5, "start"}, {t2.Num, size, "start"}} {
		at, err := Since(w.j, w.env.Tree, w.turnNum(c.turn).StartSeq, w.j.NextSeq(), w.area.Path, w.dev)
		if err != nil {
			t.Fatal(err)
		}
		v, err := at.Find("s")
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.CreateTemp(t.TempDir(), "v")
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Materialize(w.env.Tree, w.j, dst); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		syscall.Fstat(int(dst.Fd()), &st)
		head := make([]byte, len(c.head))
		dst.ReadAt(head, 0)
		dst.Close()
		if st.Size != c.size || string(head) != c.head {
			t.Errorf("turn %d's version: %d bytes starting %q, want %d starting %q", c.turn, st.Size, head, c.size, c.head)
		}
		if st.Blocks*512 > 1<<20 {
			t.Errorf("turn %d's version takes %d bytes on disk: its holes were copied", c.turn, st.Blocks*512)
		}
	}
}
