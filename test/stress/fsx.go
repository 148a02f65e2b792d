// Package stress exercises a filesystem with random I/O and verifies
// every byte it reads against a model, in the style of fsx: reads,
// writes, truncations, hole punches (fallocate PUNCH_HOLE) and writes
// and reads through shared mappings, on one file, against an in-memory
// copy of what the file must hold. Exerciser is used by the e2e stress
// test (a short run under go test) and by the fsx command that
// test/stress/run.sh runs at length, beside fio and stress-ng.
//
// A run is reproducible from its seed. A verification failure reports
// the first offset that differs and the operations that led there.
package stress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Options sets up an Exerciser.
type Options struct {
	Seed    int64
	MaxSize int64 // the file never grows past this (default 256 KiB)
	MaxOp   int   // longest read, write or punch (default 64 KiB)
	// NoPunch and NoMmap leave those operations out (a filesystem
	// without them).
	NoPunch, NoMmap bool
}

// Exerciser drives one file.
type Exerciser struct {
	path  string
	opts  Options
	rnd   *rand.Rand
	f     *os.File
	model []byte
	n     int      // operations done
	log   []string // the last operations, for a failure's report
	page  int64
}

// New opens the file at path, creating it if it does not exist; what it
// holds is where the model starts.
func New(path string, opts Options) (*Exerciser, error) {
	if opts.MaxSize <= 0 {
		opts.MaxSize = 256 << 10
	}
	if opts.MaxOp <= 0 {
		opts.MaxOp = 64 << 10
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	model, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Exerciser{path: path, opts: opts, rnd: rand.New(rand.NewSource(opts.Seed)), f: f,
		model: model, page: int64(os.Getpagesize())}, nil
}

// Close closes the file after a last full verification. Closing again
// does nothing.
func (x *Exerciser) Close() error {
	if x.f == nil {
		return nil
	}
	err := x.Verify()
	x.f.Close()
	x.f = nil
	return err
}

// Ops reports how many operations were done.
func (x *Exerciser) Ops() int { return x.n }

// Run does n random operations, verifying as it goes, and the whole
// file at the end.
func (x *Exerciser) Run(n int) error {
	for i := 0; i < n; i++ {
		if err := x.Step(); err != nil {
			return err
		}
	}
	return x.Verify()
}

// Step does one random operation.
func (x *Exerciser) Step() error {
	x.n++
	size := int64(len(x.model))
	var err error
	switch k := x.rnd.Intn(100); {
	case k < 30:
		err = x.write(x.rnd.Int63n(x.opts.MaxSize), 1+x.rnd.Intn(x.opts.MaxOp))
	case k < 55:
		err = x.read(x.rnd.Int63n(size+1), 1+x.rnd.Intn(x.opts.MaxOp))
	case k < 63:
		err = x.truncate(x.rnd.Int63n(x.opts.MaxSize + 1))
	case k < 73 && !x.opts.NoPunch:
		err = x.punch(x.rnd.Int63n(size+1), 1+x.rnd.Intn(x.opts.MaxOp))
	case k < 85 && !x.opts.NoMmap:
		err = x.mapWrite(x.rnd.Int63n(size+1), 1+x.rnd.Intn(x.opts.MaxOp))
	case k < 95 && !x.opts.NoMmap:
		err = x.mapRead(x.rnd.Int63n(size+1), 1+x.rnd.Intn(x.opts.MaxOp))
	case k < 97:
		err = x.reopen()
	default:
		err = x.Verify()
	}
	if err != nil {
		return x.fail(err)
	}
	return nil
}

func (x *Exerciser) note(format string, args ...any) {
	x.log = append(x.log, fmt.Sprintf("%d: ", x.n)+fmt.Sprintf(format, args...))
	if len(x.log) > 32 {
		x.log = x.log[1:]
	}
}

func (x *Exerciser) fail(err error) error {
	return fmt.Errorf("%s (seed %d), operation %d: %w\nlast operations:\n  %s",
		x.path, x.opts.Seed, x.n, err, strings.Join(x.log, "\n  "))
}

func (x *Exerciser) data(n int) []byte {
	b := make([]byte, n)
	x.rnd.Read(b)
	return b
}

func (x *Exerciser) grow(size int64) {
	if size > int64(len(x.model)) {
		x.model = append(x.model, make([]byte, size-int64(len(x.model)))...)
	}
}

func (x *Exerciser) write(off int64, n int) error {
	if off+int64(n) > x.opts.MaxSize {
		n = int(x.opts.MaxSize - off)
	}
	x.note("write %d+%d (size %d)", off, n, len(x.model))
	b := x.data(n)
	if _, err := x.f.WriteAt(b, off); err != nil {
		return err
	}
	x.grow(off + int64(n))
	copy(x.model[off:], b)
	return nil
}

func (x *Exerciser) read(off int64, n int) error {
	x.note("read %d+%d (size %d)", off, n, len(x.model))
	b := make([]byte, n)
	got, err := x.f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	want := x.model[min(off, int64(len(x.model))):min(off+int64(n), int64(len(x.model)))]
	return compare(off, want, b[:got])
}

func (x *Exerciser) truncate(size int64) error {
	x.note("truncate %d (size %d)", size, len(x.model))
	if err := x.f.Truncate(size); err != nil {
		return err
	}
	if size < int64(len(x.model)) {
		x.model = x.model[:size]
	}
	x.grow(size)
	return nil
}

func (x *Exerciser) punch(off int64, n int) error {
	x.note("punch %d+%d (size %d)", off, n, len(x.model))
	err := unix.Fallocate(int(x.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, int64(n))
	if errors.Is(err, unix.EOPNOTSUPP) {
		x.opts.NoPunch = true
		return nil
	}
	if err != nil {
		return err
	}
	end := min(off+int64(n), int64(len(x.model)))
	if off < end {
		clear(x.model[off:end])
	}
	return nil
}

// mapping maps the pages of the file that hold [off, off+n), which must
// lie within the file, and returns the mapping and where off is in it.
func (x *Exerciser) mapping(off int64, n int, prot int) ([]byte, int64, error) {
	start := off &^ (x.page - 1)
	m, err := unix.Mmap(int(x.f.Fd()), start, int(off+int64(n)-start), prot, unix.MAP_SHARED)
	return m, off - start, err
}

func (x *Exerciser) mapWrite(off int64, n int) error {
	size := int64(len(x.model))
	n = int(min(int64(n), size-off))
	if n <= 0 {
		return nil
	}
	x.note("mapwrite %d+%d (size %d)", off, n, size)
	m, at, err := x.mapping(off, n, unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return err
	}
	b := x.data(n)
	copy(m[at:], b)
	copy(x.model[off:], b)
	if x.rnd.Intn(2) == 0 {
		if err := unix.Msync(m, unix.MS_SYNC); err != nil {
			unix.Munmap(m)
			return err
		}
	}
	return unix.Munmap(m)
}

func (x *Exerciser) mapRead(off int64, n int) error {
	size := int64(len(x.model))
	n = int(min(int64(n), size-off))
	if n <= 0 {
		return nil
	}
	x.note("mapread %d+%d (size %d)", off, n, size)
	m, at, err := x.mapping(off, n, unix.PROT_READ)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	return compare(off, x.model[off:off+int64(n)], m[at:at+int64(n)])
}

func (x *Exerciser) reopen() error {
	x.note("close and reopen")
	if err := x.f.Close(); err != nil {
		return err
	}
	f, err := os.OpenFile(x.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	x.f = f
	return nil
}

// Verify checks the file's size and every byte.
func (x *Exerciser) Verify() error {
	st, err := x.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != int64(len(x.model)) {
		return fmt.Errorf("size %d, want %d", st.Size(), len(x.model))
	}
	b := make([]byte, len(x.model))
	n, err := x.f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return compare(0, x.model, b[:n])
}

// Model returns what the file must hold.
func (x *Exerciser) Model() []byte { return x.model }

// compare reports the first difference between want and got, read at
// off.
func compare(off int64, want, got []byte) error {
	if bytes.Equal(want, got) {
		return nil
	}
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Errorf("offset %d: read %#02x, want %#02x (%d bytes read at %d)", off+int64(i), got[i], want[i], len(got), off)
		}
	}
	return fmt.Errorf("read %d bytes at %d, want %d", len(got), off, len(want))
}
