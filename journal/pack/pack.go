package pack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Dir is a directory of pack files and the pack being written. Its
// methods are safe for concurrent use.
type Dir struct {
	dir  string
	sync bool // fsync new packs' directory entries and sealed packs

	mu   sync.Mutex
	next uint64   // number of the next pack to create
	cur  *os.File // the pack being written, or nil
	id   uint64   // its number
	size int64    // its length
}

// Name is the file name of pack id.
func Name(id uint64) string { return fmt.Sprintf("%016x%s", id, packSuffix) }

// Open opens the pack directory dir, creating it (mode 0700) if
// needed. With sync, new packs' names and sealed packs are fsynced.
//
// New packs are numbered after the greatest that exists. A number may
// come back after its pack was deleted, but only once no index entry
// names it: the caller deletes entries (and makes that durable) before
// their pack.
func Open(dir string, sync bool) (*Dir, error) {
	p := &Dir{dir: dir, sync: sync, next: 1}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	sizes, err := p.List()
	if err != nil {
		return nil, err
	}
	for id := range sizes {
		p.next = max(p.next, id+1)
	}
	return p, nil
}

// List returns the length of every pack, by number.
func (p *Dir) List() (map[uint64]int64, error) {
	es, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, fmt.Errorf("journal: list packs: %w", err)
	}
	out := map[uint64]int64{}
	for _, e := range es {
		name, ok := strings.CutSuffix(e.Name(), packSuffix)
		if !ok || len(name) != 16 {
			continue
		}
		id, err := strconv.ParseUint(name, 16, 64)
		if err != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("journal: list packs: %w", err)
		}
		out[id] = fi.Size()
	}
	return out, nil
}

// Add appends an entry for the bytes z (compressed from ulen bytes with
// hash h) to the pack being written, starting one if needed, and
// returns where it went. The bytes are in the kernel's page cache when
// Add returns (they survive the process being killed); Flush makes
// them durable.
//
// A failed write (the filesystem is full) is cut back off the pack, so
// the pack stays a sequence of whole entries.
func (p *Dir) Add(h [32]byte, ulen int, z []byte) (Loc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && p.size >= packTarget {
		if err := p.sealLocked(); err != nil {
			return Loc{}, err
		}
	}
	if p.cur == nil {
		if err := p.startLocked(); err != nil {
			return Loc{}, err
		}
	}
	e := make([]byte, EntryHeader, EntryHeader+len(z))
	copy(e, h[:])
	binary.LittleEndian.PutUint32(e[32:], uint32(ulen))
	binary.LittleEndian.PutUint32(e[36:], uint32(len(z)))
	e = append(e, z...)
	l := Loc{Pack: p.id, Off: p.size, N: uint32(len(z))}
	if _, err := p.cur.WriteAt(e, p.size); err != nil {
		// Whatever part was written goes again; if even that fails
		// the pack is sealed with a torn tail, which is never indexed
		// and counts as unused space, which the journal reclaims.
		if terr := p.cur.Truncate(p.size); terr != nil {
			p.sealLocked()
		}
		return Loc{}, fmt.Errorf("journal: write pack: %w", err)
	}
	p.size += int64(len(e))
	return l, nil
}

// syncPackDir makes a new pack's name durable; tests make it fail.
var syncPackDir = syncDir

// startLocked creates the next pack.
//
// The number is spent once its file exists: a pack that fails before
// it is in use is removed, and were even that to fail, the next one
// still takes the next number instead of meeting the leftover (O_EXCL)
// on every change until a restart. A leftover holds no entry the index
// names, so it is reclaimed as any unused pack (reclaim.go).
func (p *Dir) startLocked() error {
	id := p.next
	f, err := os.OpenFile(filepath.Join(p.dir, Name(id)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("journal: new pack: %w", err)
	}
	p.next++
	giveUp := func(err error) error {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if _, err := f.WriteAt([]byte(packMagic), 0); err != nil {
		return giveUp(fmt.Errorf("journal: new pack: %w", err))
	}
	if p.sync {
		// The pack's name must survive a power cut with its content.
		if err := syncPackDir(p.dir); err != nil {
			return giveUp(err)
		}
	}
	p.cur, p.id, p.size = f, id, HeaderSize
	return nil
}

// sealLocked closes the pack being written; nothing is added to it
// again.
func (p *Dir) sealLocked() error {
	if p.cur == nil {
		return nil
	}
	var err error
	if p.sync {
		err = p.cur.Sync()
	}
	p.cur.Close()
	p.cur = nil
	if err != nil {
		return fmt.Errorf("journal: seal pack: %w", err)
	}
	return nil
}

// Seal closes the pack being written, if any, and returns the number
// every pack below which is sealed: nothing is added to them again.
func (p *Dir) Seal() (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, p.sealLocked()
}

// SyncPack makes pack id durable on disk, sealed or not.
func (p *Dir) SyncPack(id uint64) error {
	f, err := os.Open(filepath.Join(p.dir, Name(id)))
	if err != nil {
		return fmt.Errorf("journal: sync pack: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: sync pack: %w", err)
	}
	return nil
}

// Flush makes what was added so far durable on disk.
func (p *Dir) Flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return nil
	}
	if err := p.cur.Sync(); err != nil {
		return fmt.Errorf("journal: sync pack: %w", err)
	}
	return nil
}

// Read returns the stored bytes of the entry at l, checking that it is
// the entry of hash h.
func (p *Dir) Read(l Loc, h [32]byte) ([]byte, error) {
	if l.Size() > maxEntry {
		return nil, fmt.Errorf("%w: chunk location of %d bytes", ErrCorrupt, l.N)
	}
	f, err := os.Open(filepath.Join(p.dir, Name(l.Pack)))
	if errors.Is(err, os.ErrNotExist) {
		// The index names the pack, and packs are deleted only once
		// it names nothing in them (the journal's reclaim): this one was lost.
		// Not the error's ENOENT, which would read as "no such path".
		return nil, fmt.Errorf("%w: pack %s, which holds chunk %x, is missing", ErrDamaged, Name(l.Pack), h[:6])
	}
	if err != nil {
		return nil, fmt.Errorf("journal: pack of chunk %x: %w", h[:6], err)
	}
	defer f.Close()
	e := make([]byte, l.Size())
	if _, err := f.ReadAt(e, l.Off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: pack %s ends before chunk %x", ErrCorrupt, Name(l.Pack), h[:6])
		}
		return nil, fmt.Errorf("journal: read pack: %w", err)
	}
	if [32]byte(e[:32]) != h || binary.LittleEndian.Uint32(e[36:]) != l.N {
		return nil, fmt.Errorf("%w: pack %s holds another chunk where chunk %x should be", ErrCorrupt, Name(l.Pack), h[:6])
	}
	return e[EntryHeader:], nil
}

// ReadEntry returns the whole entry (header and stored bytes) at l in
// f, pack l.Pack opened with OpenPack, to copy it into another pack.
func (p *Dir) ReadEntry(f *os.File, l Loc, h [32]byte) ([]byte, error) {
	e := make([]byte, l.Size())
	if _, err := f.ReadAt(e, l.Off); err != nil {
		return nil, fmt.Errorf("journal: read pack %s: %w", Name(l.Pack), err)
	}
	if [32]byte(e[:32]) != h {
		return nil, fmt.Errorf("%w: pack %s holds another chunk where chunk %x should be", ErrCorrupt, Name(l.Pack), h[:6])
	}
	return e, nil
}

// AddEntry appends a whole entry read by ReadEntry.
func (p *Dir) AddEntry(e []byte) (Loc, error) {
	return p.Add([32]byte(e[:32]), int(binary.LittleEndian.Uint32(e[32:])), e[EntryHeader:])
}

// OpenPack opens pack id for reading, to copy its entries (ReadEntry).
func (p *Dir) OpenPack(id uint64) (*os.File, error) {
	f, err := os.Open(filepath.Join(p.dir, Name(id)))
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return f, nil
}

// Remove deletes pack id.
func (p *Dir) Remove(id uint64) error {
	err := os.Remove(filepath.Join(p.dir, Name(id)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: delete pack: %w", err)
	}
	return nil
}

// Close seals the pack being written.
func (p *Dir) Close() error {
	_, err := p.Seal()
	return err
}

// syncDir fsyncs a directory, making the names in it durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("journal: sync %s: %w", dir, err)
	}
	return nil
}
