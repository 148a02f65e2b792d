package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMissingPack: content whose pack is gone is damage (ErrDamaged),
// not a missing file: the error must not read as ENOENT, which callers
// take for "no such path".
func TestMissingPack(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	content := bytes.Repeat([]byte("pre-image "), 1000)
	r := &Record{Kind: KindData, Path: "a", Len: int64(len(content))}
	g := j.Enter()
	if err := j.Append(g, r, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	g.Leave()
	if _, err := j.EndTurn(time.Now()); err != nil {
		t.Fatal(err)
	}
	j.Close()
	packs, _ := filepath.Glob(filepath.Join(dir, packDirName, "*.pack"))
	for _, p := range packs {
		os.Remove(p)
	}
	if j, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	err = j.ReadContent(r, func(int64, []byte) error { return nil })
	if !errors.Is(err, ErrDamaged) || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("content of a lost pack: %v, want ErrDamaged and not ENOENT", err)
	}
}
