package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"

	"github.com/cowfs/cowfs/test/testenv"
)

// duJournal is what the workspace's journal directory takes on disk.
func (w *workspace) duJournal() int64 {
	w.t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(w.state, "*", "journal"))
	if len(dirs) != 1 {
		w.t.Fatalf("journal directories: %v", dirs)
	}
	var n int64
	filepath.WalkDir(dirs[0], func(p string, e fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err == nil && !e.IsDir() && unix.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// sparseState is a file's size, what it takes on disk, where its data
// begins at or after from (-1: holes to the end) and its first n bytes.
func sparseState(t *testing.T, p string, from int64, n int) (size, disk, data int64, head []byte) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	data, err = unix.Seek(int(f.Fd()), from, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		data = -1
	} else if err != nil {
		t.Fatal(err)
	}
	head = make([]byte, n)
	if _, err := f.ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	return st.Size, st.Blocks * 512, data, head
}

// TestSparseTail: `truncate -s 4T notes.txt` in a turn. Its rollback
// journals the cut-off tail — holes — in kilobytes and exits 0 with the
// file as it was; unrevert gives the 4 TiB file back, sparse; diff
// names the 4 TiB version without reading it, and cat --at serves it
// without writing its holes. A turn that then cuts the tail off through the
// mount journals its holes as holes too, and its rollback puts back the
// sparse file.
func TestSparseTail(t *testing.T) {
	const big = 4 << 40
	w := newWorkspace(t)
	notes := bytes.Repeat([]byte("a note\n"), 50)
	w.seed(map[string]string{"notes.txt": string(notes)})
	w.mount()
	backing := filepath.Join(w.dir, "notes.txt")

	w.cowfs("turn", "begin", "--anchor", "m1")
	w.sh("truncate -s 4T notes.txt")
	w.cowfs("turn", "end")
	if size, disk, _, _ := sparseState(t, backing, 0, 0); size != big || disk > 1<<20 {
		testenv.Skip(t, fmt.Sprintf("the test filesystem keeps no 4 TiB sparse file: %d bytes, %d on disk", size, disk))
	}

	before := w.duJournal()
	res, code := rollbackJSON(w, "1")
	if code != 0 || !res.Complete {
		t.Fatalf("rollback of truncate -s 4T: exit %d, %+v", code, res)
	}
	if grew := w.duJournal() - before; grew > 1<<20 {
		t.Errorf("the rollback grew the journal by %d bytes", grew)
	}
	if got, err := os.ReadFile(w.path("notes.txt")); err != nil || !bytes.Equal(got, notes) {
		t.Fatalf("notes.txt after the rollback: %d bytes, %v", len(got), err)
	}

	w.cowfs("unrevert")
	size, disk, data, head := sparseState(t, backing, 1<<20, len(notes))
	if size != big || disk > 1<<20 || data != -1 || !bytes.Equal(head, notes) {
		t.Fatalf("after the unrevert: %d bytes, %d on disk, data at %d, first bytes equal: %v", size, disk, data, bytes.Equal(head, notes))
	}

	// (After the rollback, which fails fast where holes are data: the
	// diff would copy the 4 TiB file there.)
	var d ctl.Diff
	w.cowfsJSON(&d, "diff", "1")
	if len(d.Files) != 1 || !d.Files[0].TooLarge || d.Files[0].Diff != "" {
		t.Errorf("diff of the turn: %+v", d.Files)
	}

	// Through the mount: cut the 4 TiB tail off, and roll that back.
	w.cowfs("turn", "begin", "--anchor", "m2")
	w.sh("truncate -s 100 notes.txt")
	w.cowfs("turn", "end")
	rc, err := ctl.NewClient(w.status().Socket).Content(context.Background(), "2", "notes.txt")
	if err != nil {
		t.Fatalf("cat --at 2 of a 4 TiB sparse file: %v", err)
	}
	got := make([]byte, len(notes))
	_, err = io.ReadFull(rc, got)
	rc.Close()
	if err != nil || !bytes.Equal(got, notes) {
		t.Errorf("cat --at 2: %q, %v", got, err)
	}
	before = w.duJournal()
	if res, code := rollbackJSON(w, "2"); code != 0 || !res.Complete {
		t.Fatalf("rollback of the cut: exit %d, %+v", code, res)
	}
	size, disk, data, head = sparseState(t, backing, 1<<20, len(notes))
	if size != big || disk > 1<<20 || data != -1 || !bytes.Equal(head, notes) {
		t.Fatalf("after rolling back the cut: %d bytes, %d on disk, data at %d, first bytes equal: %v", size, disk, data, bytes.Equal(head, notes))
	}
	if grew := w.duJournal() - before; grew > 1<<20 {
		t.Errorf("the rollback of the cut grew the journal by %d bytes", grew)
	}
}

// TestSparseHoleOverwritten: a turn writes 1 MiB into the middle of a
// file's 1 GiB hole; the rollback makes it a hole again — not zeros on
// disk — and unrevert puts the bytes back.
func TestSparseHoleOverwritten(t *testing.T) {
	const hole = 1 << 30
	w := newWorkspace(t)
	head, tail := bytes.Repeat([]byte("h"), 4096), bytes.Repeat([]byte("t"), 4096)
	w.seed(map[string]string{"db": string(head)})
	backing := filepath.Join(w.dir, "db")
	f, err := os.OpenFile(backing, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(tail, 4096+hole)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, disk0, data, _ := sparseState(t, backing, 4096, 0)
	if data != 4096+hole {
		testenv.Skip(t, fmt.Sprintf("the test filesystem keeps no holes (data at %d)", data))
	}
	w.mount()

	w.cowfs("turn", "begin")
	w.sh("head -c 1048576 /dev/urandom > x.bin && dd if=x.bin of=db bs=64k seek=8192 conv=notrunc status=none")
	w.cowfs("turn", "end")
	written, err := os.ReadFile(w.path("x.bin"))
	if err != nil {
		t.Fatal(err)
	}

	if res, code := rollbackJSON(w, "1"); code != 0 || !res.Complete {
		t.Fatalf("rollback: exit %d, %+v", code, res)
	}
	if _, disk, data, _ := sparseState(t, backing, 4096, 0); data != 4096+hole || disk != disk0 {
		t.Errorf("after the rollback: data at %d (want %d), %d bytes on disk (%d before the turn)", data, int64(4096+hole), disk, disk0)
	}

	w.cowfs("unrevert")
	got := make([]byte, len(written))
	g, err := os.Open(w.path("db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.ReadAt(got, 8192*65536)
	g.Close()
	if err != nil || !bytes.Equal(got, written) {
		t.Errorf("the turn's bytes after the unrevert: equal %v, %v", bytes.Equal(got, written), err)
	}
}
