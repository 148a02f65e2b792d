package pack

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// addChunk compresses b and adds it to p.
func addChunk(t *testing.T, p *Dir, c *Codec, b []byte) (Loc, [32]byte) {
	t.Helper()
	h := Hash(b)
	l, err := p.Add(h, len(b), c.Compress(nil, b))
	if err != nil {
		t.Fatal(err)
	}
	return l, h
}

// readChunk reads the entry at l back and decompresses it.
func readChunk(t *testing.T, p *Dir, c *Codec, l Loc, h [32]byte) []byte {
	t.Helper()
	z, err := p.Read(l, h)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Decompress(nil, z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newCodec(t *testing.T) *Codec {
	t.Helper()
	c, err := NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// What is added reads back, across a seal and a reopen; packs are
// sealed past their target size, and a reopened directory numbers new
// packs after the greatest.
func TestAddRead(t *testing.T) {
	dir := t.TempDir()
	c := newCodec(t)
	p, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		l Loc
		h [32]byte
		b []byte
	}
	var es []entry
	for i := range 12 {
		b := randomBytes(uint64(i), ChunkSize)
		l, h := addChunk(t, p, c, b)
		es = append(es, entry{l, h, b})
	}
	if es[len(es)-1].l.Pack == es[0].l.Pack {
		t.Errorf("12 MiB went into one pack: packs are not sealed at %d bytes", packTarget)
	}
	sealed, err := p.Seal()
	if err != nil {
		t.Fatal(err)
	}
	if sealed <= es[len(es)-1].l.Pack {
		t.Errorf("Seal says packs below %d are sealed; the last written is %d", sealed, es[len(es)-1].l.Pack)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p, err = Open(dir, false); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, e := range es {
		if !bytes.Equal(readChunk(t, p, c, e.l, e.h), e.b) {
			t.Fatalf("entry %d reads back different bytes", i)
		}
	}
	sizes, err := p.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) == 0 || sizes[es[0].l.Pack] < es[0].l.Off+es[0].l.Size() {
		t.Fatalf("List: %v", sizes)
	}
	l, _ := addChunk(t, p, c, []byte("after the reopen"))
	if l.Pack <= es[len(es)-1].l.Pack {
		t.Errorf("a reopened directory wrote pack %d, not after %d", l.Pack, es[len(es)-1].l.Pack)
	}
}

// A location that names the wrong entry, or bytes past the pack's end,
// is ErrCorrupt; a pack that is gone is ErrDamaged, and not ENOENT,
// which callers take for "no such path".
func TestReadDamage(t *testing.T) {
	dir := t.TempDir()
	c := newCodec(t)
	p, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, h := addChunk(t, p, c, []byte("one"))
	l2, _ := addChunk(t, p, c, []byte("two"))
	if _, err := p.Read(l2, h); !errors.Is(err, ErrCorrupt) {
		t.Errorf("another entry's location: %v, want ErrCorrupt", err)
	}
	past := l
	past.Off += 1 << 20
	if _, err := p.Read(past, h); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a location past the end: %v, want ErrCorrupt", err)
	}
	if _, err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(l.Pack); err != nil {
		t.Fatal(err)
	}
	_, err = p.Read(l, h)
	if !errors.Is(err, ErrDamaged) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing pack: %v, want ErrDamaged and not ENOENT", err)
	}
}

// TestStartFails: a new pack whose name could not be made durable is
// given up, and the next add starts another; before, the file stayed
// with its number, and every later pack creation met it (EEXIST) until
// the journal was reopened.
func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	c := newCodec(t)
	p, err := Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("injected: fsync of the pack directory failed")
	syncPackDir = func(string) error {
		syncPackDir = syncDir // once
		return refused
	}
	t.Cleanup(func() { syncPackDir = syncDir })
	if _, err := p.Add(Hash([]byte("lost")), 4, c.Compress(nil, []byte("lost"))); !errors.Is(err, refused) {
		t.Fatalf("add with its pack refused: %v, want the refusal", err)
	}
	want := [][]byte{[]byte("kept"), []byte("also kept")}
	var locs []Loc
	for _, b := range want {
		l, _ := addChunk(t, p, c, b)
		locs = append(locs, l)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Size() <= HeaderSize {
			t.Errorf("pack %s was left behind empty", e.Name())
		}
	}
	if p, err = Open(dir, true); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, b := range want {
		if got := readChunk(t, p, c, locs[i], Hash(b)); !bytes.Equal(got, b) {
			t.Errorf("entry %d reads %q", i, got)
		}
	}
}

// Entries copied with ReadEntry and AddEntry read back at their new
// place.
func TestCopyEntry(t *testing.T) {
	dir := t.TempDir()
	c := newCodec(t)
	p, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b := []byte("moved by a repack")
	l, h := addChunk(t, p, c, b)
	if _, err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	f, err := p.OpenPack(l.Pack)
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.ReadEntry(f, l, h)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	to, err := p.AddEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if to.Pack == l.Pack {
		t.Fatalf("copied into the sealed pack %d", l.Pack)
	}
	if err := p.SyncPack(to.Pack); err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(l.Pack); err != nil {
		t.Fatal(err)
	}
	if got := readChunk(t, p, c, to, h); !bytes.Equal(got, b) {
		t.Errorf("the copy reads %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, Name(l.Pack))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed pack: %v", err)
	}
}
