package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// memStore is a Store in memory: it survives a "crash" of the log
// (Abandon) as Badger survives a kill of the daemon.
type memStore struct {
	mu   sync.Mutex
	kv   map[string]string
	mark Mark
}

func newMemStore() *memStore { return &memStore{kv: map[string]string{}} }

func (s *memStore) Write(ops []Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		if op.Delete {
			delete(s.kv, string(op.Key))
		} else {
			s.kv[string(op.Key)] = string(op.Val)
		}
	}
	return nil
}

func (s *memStore) Mark() (Mark, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mark, nil
}

func (s *memStore) SetMark(m Mark) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mark = m
	return nil
}

func (s *memStore) get(k string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[k]
	return v, ok
}

func open(t *testing.T, dir string, s Store) *Log {
	t.Helper()
	l, err := Open(dir, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// set logs one entry that sets each key to its value.
func set(t *testing.T, l *Log, kv ...string) {
	t.Helper()
	err := l.Append(func() ([]Op, error) {
		var ops []Op
		for i := 0; i < len(kv); i += 2 {
			ops = append(ops, Op{Key: []byte(kv[i]), Val: []byte(kv[i+1])})
		}
		return ops, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logN logs n entries, each setting key "<prefix><i>" to a value of
// size bytes, and returns the keys.
func logN(t *testing.T, l *Log, prefix string, n, size int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("%s%d", prefix, i)
		set(t, l, k, string(bytes.Repeat([]byte{'v'}, size)))
		keys = append(keys, k)
	}
	return keys
}

func has(t *testing.T, s *memStore, keys []string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := s.get(k); !ok {
			t.Fatalf("key %s is not in the store", k)
		}
	}
}

// TestReplay: entries a crash kept from reaching the store are there
// after the next open, from the log alone, deletes included.
func TestReplay(t *testing.T) {
	dir, s := t.TempDir(), newMemStore()
	l := open(t, dir, s)
	l.Pause()
	keys := logN(t, l, "k", 50, 10)
	set(t, l, "gone", "x")
	if err := l.Append(func() ([]Op, error) { return []Op{{Delete: true, Key: []byte("gone")}}, nil }); err != nil {
		t.Fatal(err)
	}
	if l.Backlog() == 0 || len(s.kv) != 0 {
		t.Fatal("the log was applied before the crash: the test shows nothing")
	}
	l.Abandon()
	l = open(t, dir, s)
	defer l.Close()
	has(t, s, keys)
	if _, ok := s.get("gone"); ok {
		t.Errorf("a deleted key is back after replay")
	}
}

// TestPending: a set marked Lookup is answered by Pending until the
// store has it, and then by the store; one not marked never is.
func TestPending(t *testing.T) {
	dir, s := t.TempDir(), newMemStore()
	l := open(t, dir, s)
	defer l.Close()
	l.Pause()
	err := l.Append(func() ([]Op, error) {
		return []Op{{Key: []byte("chunk"), Val: []byte("loc"), Lookup: true}, {Key: []byte("record"), Val: []byte("r")}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := l.Pending([]byte("chunk")); !ok || string(v) != "loc" {
		t.Errorf("Pending(chunk) = %q, %v", v, ok)
	}
	if _, ok := l.Pending([]byte("record")); ok {
		t.Errorf("Pending answers for a set not marked Lookup")
	}
	if err := l.Apply(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Pending([]byte("chunk")); ok {
		t.Errorf("Pending still answers once the store has it")
	}
	if v, _ := s.get("chunk"); v != "loc" {
		t.Errorf("the store has %q", v)
	}
}

// TestCutEntry: an entry cut short (a kill in the middle of its write,
// or power lost) is dropped at open, with nothing after it; the entries
// before it stay and the log goes on from there.
func TestCutEntry(t *testing.T) {
	dir, s := t.TempDir(), newMemStore()
	l := open(t, dir, s)
	keys := logN(t, l, "a", 20, 10)
	gen := l.gen
	l.Abandon()
	p := filepath.Join(dir, walName(gen))
	whole, _ := os.ReadFile(p)
	cut := encodeEntry([]Op{{Key: []byte("never"), Val: []byte("never acknowledged")}})
	for i, tail := range [][]byte{cut[:len(cut)-3], append([]byte{}, cut[:entryHeader]...), {0xff, 0xff}} {
		if err := os.WriteFile(p, append(append([]byte{}, whole...), tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		l = open(t, dir, s)
		has(t, s, keys)
		if _, ok := s.get("never"); ok {
			t.Errorf("a cut entry was applied")
		}
		if st, _ := os.Stat(p); st != nil && st.Size() > int64(len(whole)) && l.gen == gen {
			t.Errorf("the cut entry is still in the log (%d bytes, %d before it)", st.Size(), len(whole))
		}
		l.Pause()
		more := logN(t, l, fmt.Sprintf("b%d-", i), 3, 10)
		l.Abandon()
		l = open(t, dir, s)
		keys = append(keys, more...)
		has(t, s, keys)
		gen = l.gen
		l.Abandon()
		p = filepath.Join(dir, walName(gen))
		whole, _ = os.ReadFile(p)
	}
}

// TestRotates: a log past walRotate, fully applied, is replaced by the
// next generation, and nothing logged is lost.
func TestRotates(t *testing.T) {
	dir, s := t.TempDir(), newMemStore()
	l := open(t, dir, s)
	first := l.gen
	keys := logN(t, l, "k", walRotate/(60<<10)+10, 60<<10)
	if err := l.Apply(); err != nil {
		t.Fatal(err)
	}
	if l.gen == first {
		t.Fatalf("the log was not replaced after %d bytes", l.end)
	}
	if _, err := os.Stat(filepath.Join(dir, walName(first))); !os.IsNotExist(err) {
		t.Errorf("the replaced log is still there: %v", err)
	}
	l.Pause()
	more := logN(t, l, "m", 5, 10)
	l.Abandon()
	l = open(t, dir, s)
	defer l.Close()
	has(t, s, append(keys, more...))
}

// TestRotateFails: when the next generation cannot be made, the log
// goes on in the old one, and what is logged there survives a crash:
// the mark must not have moved on to a generation that does not exist.
func TestRotateFails(t *testing.T) {
	dir, s := t.TempDir(), newMemStore()
	l := open(t, dir, s)
	l.Pause() // only the applies below reach the store
	first := l.gen
	keys := logN(t, l, "k", walRotate/(60<<10)+10, 60<<10)
	refused := false
	openLogFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		openLogFile, refused = os.OpenFile, true // once
		return nil, errors.New("injected: cannot create the next log")
	}
	t.Cleanup(func() { openLogFile = os.OpenFile })
	l.Apply() // applies, then fails to replace the log
	if !refused {
		t.Fatalf("the log past walRotate (%d bytes) was not replaced", l.end)
	}
	if l.gen != first {
		t.Fatalf("the log moved to generation %d, which could not be made", l.gen)
	}
	more := logN(t, l, "m", 5, 10) // logged in the old generation, not applied
	l.Abandon()
	l = open(t, dir, s)
	has(t, s, append(keys, more...))
	// With nothing refused, the next apply replaces the log.
	l.Pause()
	last := logN(t, l, "z", 20, 10)
	if err := l.Apply(); err != nil {
		t.Fatal(err)
	}
	if l.gen == first {
		t.Errorf("the log was not replaced after %d bytes", l.end)
	}
	l.Abandon()
	l = open(t, dir, s)
	defer l.Close()
	has(t, s, append(append(keys, more...), last...))
}

// FuzzDecodeEntry: no bytes make decodeEntry panic or read past them,
// and an entry encoded decodes to its operations.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry([]Op{{Key: []byte("k"), Val: []byte("v")}, {Delete: true, Key: []byte("d")}}))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, n, ok := decodeEntry(b)
		if !ok {
			return
		}
		if n > int64(len(b)) {
			t.Fatalf("entry of %d bytes in %d", n, len(b))
		}
		again, _, ok := decodeEntry(encodeEntry(ops))
		if !ok || len(again) != len(ops) {
			t.Fatalf("re-encoded entry: %v ops, want %v", len(again), len(ops))
		}
		for i := range ops {
			if ops[i].Delete != again[i].Delete || !bytes.Equal(ops[i].Key, again[i].Key) || !bytes.Equal(ops[i].Val, again[i].Val) {
				t.Fatalf("op %d differs after a round trip", i)
			}
		}
	})
}
