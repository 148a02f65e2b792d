package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// cat --at copies a large file without holding up writes for the whole
// copy (it copies optimistically, see daemon's materialize); whatever is
// written meanwhile — to another file or to the same one — the bytes it
// returns are exactly the file as the turn found it.
func TestCatWhileWriting(t *testing.T) {
	w := newWorkspace(t)
	orig := make([]byte, 32<<20)
	rand.Read(orig)
	if err := os.WriteFile(filepath.Join(w.dir, "big.bin"), orig, 0o644); err != nil {
		t.Fatal(err)
	}
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("head -c 1048576 /dev/urandom | dd of=big.bin conv=notrunc status=none")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, err := os.OpenFile(w.path("big.bin"), os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		buf := make([]byte, 64<<10)
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			rand.Read(buf)
			if _, err := f.WriteAt(buf, (i*977*4096)%int64(len(orig)-len(buf))); err != nil {
				t.Error(err)
				return
			}
			f.Sync()
			os.WriteFile(w.path("other.txt"), buf[:100], 0o644)
		}
	}()
	c := ctl.NewClient(w.status().Socket)
	for i := 0; i < 3; i++ {
		rc, err := c.Content(context.Background(), "1", "big.bin")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, orig) {
			t.Fatalf("content at 1, copy %d, while the file is written: %d bytes, equal %v, %v", i, len(got), bytes.Equal(got, orig), err)
		}
	}
	close(stop)
	wg.Wait()
	w.cowfs("turn", "end")
}
