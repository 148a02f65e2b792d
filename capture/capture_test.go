package capture

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/test/testenv"
)

// memJournal keeps what is appended in memory, with the bytes of data
// records read from their source: the helper alone, without Badger.
type memJournal struct {
	recs  []*journal.Record // appended and not discarded, in order
	bytes map[*journal.Record]string
	seq   uint64
	fail  error // Append fails with it, if set
}

func (j *memJournal) Append(g journal.Gate, rec *journal.Record, src io.ReaderAt) error {
	if j.fail != nil {
		return j.fail
	}
	if rec.Kind == journal.KindData && src != nil {
		b := make([]byte, rec.Len)
		n, err := src.ReadAt(b, rec.Off)
		if err != nil && err != io.EOF {
			return err
		}
		if j.bytes == nil {
			j.bytes = map[*journal.Record]string{}
		}
		j.bytes[rec] = string(b[:n])
	}
	j.seq++
	rec.Seq, rec.Turn = j.seq, g.Turn
	j.recs = append(j.recs, rec)
	return nil
}

func (j *memJournal) Discard(rec *journal.Record) error {
	i := slices.Index(j.recs, rec)
	if i < 0 {
		return errors.New("no such record")
	}
	j.recs = slices.Delete(j.recs, i, i+1)
	return nil
}

// kinds lists the live records as "kind path [off,end)".
func (j *memJournal) kinds() []string {
	var out []string
	for _, r := range j.recs {
		s := r.Kind.String() + " " + r.Path
		if r.Kind == journal.KindData {
			s += " [" + itoa(r.Off) + "," + itoa(r.Off+r.Len) + ")"
		}
		if r.Kind == journal.KindXattr {
			s += " " + r.XattrName
		}
		out = append(out, s)
	}
	return out
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func same(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n  %q\nwant\n  %q", got, want)
	}
}

// text is a Source of s that counts its opens.
func text(s string, opens *int) Source {
	return func() (io.ReaderAt, func(), error) {
		*opens++
		return strings.NewReader(s), func() {}, nil
	}
}

var file100 = &unix.Stat_t{Mode: syscall.S_IFREG | 0o644, Size: 100}

// write captures what a write to [lo, hi) of identity 7 ("f", 100
// bytes) destroys, as package fs does.
func write(t *testing.T, o *Op, set *Set, lo, hi int64, src Source) {
	t.Helper()
	s := o.Take(set, 7)
	defer s.Unlock()
	if err := o.Attr(s, 7, "f", file100, journal.CauseWrite); err != nil {
		t.Fatal(err)
	}
	if err := o.Data(s, 7, "f", src, lo, hi); err != nil {
		t.Fatal(err)
	}
}

// Attributes once, bytes each once, merged into the fewest records;
// nothing past the size at the first touch; the source opened only
// when bytes are missing.
func TestOncePerEpoch(t *testing.T) {
	j := &memJournal{}
	var set Set
	opens := 0
	src := text(strings.Repeat("abcdefghij", 10), &opens)
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	write(t, o, &set, 10, 20, src)
	write(t, o, &set, 15, 30, src)
	write(t, o, &set, 0, 200, src) // past the end: to the size then
	same(t, j.kinds(), "attr f", "data f [10,20)", "data f [20,30)", "data f [0,10)", "data f [30,100)")
	if got := j.bytes[j.recs[1]]; got != "abcdefghij" {
		t.Errorf("bytes of [10,20): %q", got)
	}
	before := opens
	write(t, o, &set, 5, 95, src)
	write(t, o, &set, 40, ToEnd, src)
	if len(j.recs) != 5 || opens != before {
		t.Errorf("captured bytes journaled again (%d records) or the source opened (%d times)", len(j.recs), opens-before)
	}
	// Attributes alone (a chmod) and a directory's times: once too.
	s := o.Take(&set, 7)
	if err := o.Attr(s, 7, "f", file100, journal.CauseMode); err != nil {
		t.Fatal(err)
	}
	s.Unlock()
	if len(j.recs) != 5 {
		t.Errorf("attributes journaled twice: %q", j.kinds())
	}
}

// A new epoch journals everything afresh; Forget lets go of the old.
func TestEpochReset(t *testing.T) {
	j := &memJournal{}
	var set Set
	opens := 0
	src := text(strings.Repeat("x", 100), &opens)
	write(t, &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}, &set, 0, 10, src)
	write(t, &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}, &set, 0, 10, src)
	write(t, &Op{Journal: j, Gate: journal.Gate{Epoch: 2}}, &set, 0, 10, src)
	same(t, j.kinds(), "attr f", "data f [0,10)", "attr f", "data f [0,10)")

	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 2}}
	s := o.Take(&set, 9)
	s.SetCreated()
	s.Unlock()
	if !set.Created(2, 9) || !set.Created(0, 9) || set.Created(3, 9) || set.Created(2, 7) {
		t.Error("Created does not say what the epoch created")
	}
	set.Forget(2) // the epoch the set holds: nothing to forget
	if !set.Created(2, 9) {
		t.Error("Forget of the current epoch forgot it")
	}
	set.Forget(3)
	if set.Created(0, 9) || set.ids != nil {
		t.Error("Forget kept an epoch that ended")
	}
}

// An identity created in the epoch journals nothing more: no
// attributes, bytes or extended attributes, and its source is never
// opened nor its xattrs read.
func TestCreatedJournalsNothing(t *testing.T) {
	j := &memJournal{}
	var set Set
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	s := o.Take(&set, 7)
	defer s.Unlock()
	s.SetCreated()
	opens := 0
	read := func() ([]byte, bool, error) { t.Fatal("read the xattr of a new file"); return nil, false, nil }
	if err := errors.Join(o.Attr(s, 7, "f", file100, journal.CauseWrite), o.Data(s, 7, "f", text("x", &opens), 0, 1),
		o.Xattr(s, 7, "f", syscall.S_IFREG, "user.a", read), o.Dirent(s, 7, "f", -1)); err != nil {
		t.Fatal(err)
	}
	if len(j.recs) != 0 || opens != 0 || !s.Created() || s.Touched() {
		t.Fatalf("a created file journaled %q", j.kinds())
	}
}

// Each extended attribute's old value once, read once; its absence is
// journaled too.
func TestXattrOnce(t *testing.T) {
	j := &memJournal{}
	var set Set
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	reads := 0
	xattr := func(name string, val []byte, exists bool) {
		t.Helper()
		s := o.Take(&set, 7)
		defer s.Unlock()
		err := o.Xattr(s, 7, "f", syscall.S_IFREG, name, func() ([]byte, bool, error) { reads++; return val, exists, nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	xattr("user.a", []byte("old"), true)
	xattr("user.a", []byte("newer"), true)
	xattr("user.b", nil, false)
	same(t, j.kinds(), "xattr f user.a", "xattr f user.b")
	if reads != 2 || string(j.recs[0].XattrValue) != "old" || !j.recs[0].XattrExisted || j.recs[1].XattrExisted {
		t.Errorf("%d reads; records %+v", reads, j.recs)
	}
	// A read that fails journals nothing, and marks nothing.
	s := o.Take(&set, 7)
	err := o.Xattr(s, 7, "f", syscall.S_IFREG, "user.c", func() ([]byte, bool, error) { return nil, false, syscall.EIO })
	s.Unlock()
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("xattr read failing: %v", err)
	}
	xattr("user.c", nil, false)
	if len(j.recs) != 3 {
		t.Errorf("after a failed read: %q", j.kinds())
	}
}

// A directory's attributes before its first entry change: stat'ed
// then, and never again in the epoch.
func TestDirentOnce(t *testing.T) {
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	j := &memJournal{}
	var set Set
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	for range 2 {
		s := o.Take(&set, 3)
		if err := o.Dirent(s, 3, "d", int(dir.Fd())); err != nil {
			t.Fatal(err)
		}
		s.Unlock()
	}
	same(t, j.kinds(), "attr d")
	if r := j.recs[0]; r.Cause != journal.CauseDirent || r.Type != syscall.S_IFDIR || r.Ino != 3 {
		t.Errorf("record %+v", r)
	}
	// Once journaled, the descriptor is not even looked at.
	s := o.Take(&set, 3)
	defer s.Unlock()
	if err := o.Dirent(s, 3, "d", -1); err != nil {
		t.Fatal(err)
	}
}

// A failed operation withdraws its Op's records, newest first, and
// forgets what they marked: the next change journals it again.
func TestWithdraw(t *testing.T) {
	j := &memJournal{}
	var set Set
	opens := 0
	src := text(strings.Repeat("x", 100), &opens)
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	write(t, o, &set, 10, 20, src)
	if err := o.Record(&journal.Record{Kind: journal.KindCreate, Path: "g"}, nil); err != nil {
		t.Fatal(err)
	}
	o.Withdraw()
	same(t, j.kinds())
	write(t, &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}, &set, 0, 30, src)
	same(t, j.kinds(), "attr f", "data f [0,30)")
}

// A record another Op relied on meanwhile (it took the same state,
// found the bytes journaled and journaled nothing) stays when its own
// Op withdraws; the others go.
func TestWithdrawKeepsWhatOthersUse(t *testing.T) {
	j := &memJournal{}
	var set Set
	opens := 0
	src := text(strings.Repeat("x", 100), &opens)
	a := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	write(t, a, &set, 0, 10, src)
	if err := a.Record(&journal.Record{Kind: journal.KindCreate, Path: "g"}, nil); err != nil {
		t.Fatal(err)
	}
	write(t, &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}, &set, 0, 10, src) // finds it all journaled
	a.Withdraw()
	same(t, j.kinds(), "attr f", "data f [0,10)")
}

// Discard withdraws one record the Op holds, with its mark; a record
// kept (Keep) is not the Op's to withdraw any more.
func TestDiscard(t *testing.T) {
	j := &memJournal{}
	var set Set
	opens := 0
	src := text(strings.Repeat("x", 100), &opens)
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	write(t, o, &set, 0, 10, src)
	mv := &journal.Record{Kind: journal.KindRename, Path: "a", Path2: "b"}
	if err := o.Record(mv, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Discard(mv); err != nil {
		t.Fatal(err)
	}
	same(t, j.kinds(), "attr f", "data f [0,10)")
	data := j.recs[1]
	if err := o.Discard(data); err != nil {
		t.Fatal(err)
	}
	write(t, o, &set, 0, 10, src) // the bytes are missing again
	same(t, j.kinds(), "attr f", "data f [0,10)")

	o.Keep()
	if err := o.Discard(j.recs[0]); err == nil {
		t.Error("discarded a record the op kept")
	}
	o.Withdraw()
	same(t, j.kinds(), "attr f", "data f [0,10)")
}

// A record the journal refuses marks nothing, says it is the journal's
// fault, and leaves nothing to withdraw.
func TestAppendFails(t *testing.T) {
	full := errors.New("journal full")
	j := &memJournal{fail: full}
	var set Set
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	s := o.Take(&set, 7)
	err := o.Attr(s, 7, "f", file100, journal.CauseWrite)
	s.Unlock()
	var ae *AppendError
	if !errors.As(err, &ae) || !errors.Is(err, full) || err.Error() != full.Error() {
		t.Fatalf("append failing: %v", err)
	}
	if s.Touched() {
		t.Error("a refused record marked the attributes journaled")
	}
	j.fail = nil
	opens := 0
	write(t, o, &set, 0, 10, text(strings.Repeat("x", 100), &opens))
	same(t, j.kinds(), "attr f", "data f [0,10)")
}

type group uint64

func (g group) Label(rec *journal.Record) { rec.Group = uint64(g) }

// Every record an Op appends is labelled by its author, pre-images and
// others alike.
func TestAuthorLabels(t *testing.T) {
	j := &memJournal{}
	var set Set
	opens := 0
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1, Turn: 4}, By: group(9)}
	write(t, o, &set, 0, 10, text(strings.Repeat("x", 100), &opens))
	if err := o.Record(&journal.Record{Kind: journal.KindCreate, Path: "g"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range j.recs {
		if r.Group != 9 || r.Turn != 4 {
			t.Errorf("record %s: group %d turn %d", r.Kind, r.Group, r.Turn)
		}
	}
}

// Through the real journal, a File's holes are found and not stored,
// as for the mount's backing descriptors: a 16 MiB file of 6 bytes is a
// record of its data blocks and a hole.
func TestFileHoles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("head"), 0); err != nil {
		t.Fatal(err)
	}
	const size = 16 << 20
	if _, err := f.WriteAt([]byte("ta"), size-2); err != nil {
		t.Fatal(err)
	}
	if h, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE); err != nil || h >= size {
		testenv.Skip(t, "the test filesystem keeps no holes")
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	j := journal.TestJournal(t, journal.Options{})
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	g := j.Enter()
	defer g.Leave()
	var set Set
	o := &Op{Journal: j, Gate: g}
	s := o.Take(&set, 7)
	defer s.Unlock()
	if err := o.Attr(s, 7, "sparse", &st, journal.CauseTruncate); err != nil {
		t.Fatal(err)
	}
	if err := o.Data(s, 7, "sparse", Opened(File(f.Fd())), 0, ToEnd); err != nil {
		t.Fatal(err)
	}
	rec := o.made[len(o.made)-1].rec
	if rec.Len != size || len(rec.Holes) == 0 {
		t.Fatalf("record [%d,+%d) with holes %v", rec.Off, rec.Len, rec.Holes)
	}
	var data int64 = rec.Len
	for _, h := range rec.Holes {
		data -= h.Len
	}
	if data > 1<<20 {
		t.Errorf("%d bytes of data journaled for a file of 6", data)
	}
}

// The fast path — a write to a file already captured in the epoch, by
// an Op that has taken its state — allocates nothing.
func TestCapturedAllocatesNothing(t *testing.T) {
	j := &memJournal{}
	var set Set
	opens := 0
	src := text(strings.Repeat("x", 100), &opens)
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	write(t, o, &set, 0, 100, src)
	allocs := testing.AllocsPerRun(100, func() {
		s := o.Take(&set, 7)
		if o.Attr(s, 7, "f", file100, journal.CauseWrite) != nil || o.Data(s, 7, "f", src, 20, 60) != nil {
			t.Fatal("failed")
		}
		s.Unlock()
	})
	if allocs != 0 {
		t.Errorf("%v allocations a captured write", allocs)
	}
}

// BenchmarkCaptured is what every write to a file already captured
// costs a new Op: the state taken and checked.
func BenchmarkCaptured(b *testing.B) {
	j := &memJournal{}
	var set Set
	opens := 0
	src := text(strings.Repeat("x", 1<<20), &opens)
	st := &unix.Stat_t{Mode: syscall.S_IFREG | 0o644, Size: 1 << 20}
	o := &Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
	s := o.Take(&set, 7)
	o.Attr(s, 7, "f", st, journal.CauseWrite)
	o.Data(s, 7, "f", src, 0, 1<<20)
	s.Unlock()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		o := Op{Journal: j, Gate: journal.Gate{Epoch: 1}}
		s := o.Take(&set, 7)
		off := int64(i%256) * 4096
		if o.Attr(s, 7, "f", st, journal.CauseWrite) != nil || o.Data(s, 7, "f", src, off, off+4096) != nil {
			b.Fatal("failed")
		}
		s.Unlock()
	}
}
