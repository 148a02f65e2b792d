package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPackStartFails: a new pack whose name could not be made durable
// is given up, and the next change starts another; before, the file
// stayed with its number, and every later pack creation met it
// (EEXIST) until the journal was reopened.
func TestPackStartFails(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("injected: fsync of the pack directory failed")
	syncPackDir = func(string) error {
		syncPackDir = syncDir // once
		return refused
	}
	t.Cleanup(func() { syncPackDir = syncDir })
	g := j.Enter()
	first := bytes.Repeat([]byte("lost "), 1000)
	if err := j.Append(g, &Record{Kind: KindData, Path: "a", Len: int64(len(first))}, bytes.NewReader(first)); !errors.Is(err, refused) {
		t.Fatalf("append with its pack refused: %v, want the refusal", err)
	}
	var recs []*Record
	for i, s := range []string{"kept ", "also kept "} {
		content := bytes.Repeat([]byte(s), 1000)
		r := &Record{Kind: KindData, Path: string(rune('b' + i)), Len: int64(len(content))}
		if err := j.Append(g, r, bytes.NewReader(content)); err != nil {
			t.Fatalf("append %d after a pack creation failed: %v", i, err)
		}
		recs = append(recs, r)
	}
	g.Leave()
	if _, err := j.EndTurn(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, packDirName))
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Size() <= packHeader {
			t.Errorf("pack %s was left behind empty", e.Name())
		}
	}
	if j, err = Open(dir, Options{Sync: true}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i, s := range []string{"kept ", "also kept "} {
		r, err := j.Record(recs[i].Seq)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := j.ReadContent(r, func(_ int64, b []byte) error { got.Write(b); return nil }); err != nil {
			t.Fatalf("content of %s: %v", r.Path, err)
		}
		if !bytes.Equal(got.Bytes(), bytes.Repeat([]byte(s), 1000)) {
			t.Errorf("content of %s differs", r.Path)
		}
	}
}

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
	packs, _ := filepath.Glob(filepath.Join(dir, packDirName, "*"+packSuffix))
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
