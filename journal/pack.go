package journal

import (
	"crypto/sha256"
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

// Pack files hold the journal's content, outside Badger (restic's packs
// are the model). Badger's value log gives space back only when its
// compactions report values discarded, never from the file it is
// writing, and a journal's index is too small to compact often: content
// deleted there stayed on disk. A pack is a plain file that is appended
// to, then sealed, then deleted whole when nothing in the window needs
// it, or rewritten ("repacked", reclaim.go) when only part of it is
// needed. Badger keeps records and the index from chunk hash to pack
// location.
//
// A pack is
//
//	magic   8 bytes "cowfspk1"
//	entry*  32-byte SHA-256 of the uncompressed bytes,
//	        uint32 LE uncompressed length, uint32 LE stored length,
//	        the stored bytes (one zstd frame)
//
// Entries carry their hash so a location can be checked (a wrong one
// fails loud) and a pack can be read without the index.
const (
	packMagic    = "cowfspk1"
	packHeader   = int64(len(packMagic))
	entryHeader  = 40
	packSuffix   = ".pack"
	packDirName  = "packs"
	packMaxEntry = entryHeader + 2*ChunkSize // a corrupt length must not allocate more
)

// packTarget is the size at which the pack being written is sealed and
// a new one started. Smaller packs free space in finer steps; larger
// ones mean fewer files.
const packTarget = 8 << 20

// loc is where an entry sits: pack, offset of its header, stored length.
type loc struct {
	pack uint64
	off  int64
	n    uint32 // stored (compressed) bytes, without the header
}

// size is the bytes the entry takes in its pack.
func (l loc) size() int64 { return entryHeader + int64(l.n) }

// locVersion is the first byte of an index value.
const locVersion = 1

func encodeLoc(l loc) []byte {
	b := []byte{locVersion}
	b = binary.AppendUvarint(b, l.pack)
	b = binary.AppendUvarint(b, uint64(l.off))
	return binary.AppendUvarint(b, uint64(l.n))
}

func decodeLoc(b []byte) (loc, error) {
	d := decoder{b: b}
	if d.byte() != locVersion {
		return loc{}, fmt.Errorf("%w: chunk location has an unknown version", ErrCorrupt)
	}
	l := loc{pack: d.uvarint(), off: int64(d.uvarint()), n: d.uint32()}
	if d.err || len(d.b) != 0 || l.off < packHeader {
		return loc{}, fmt.Errorf("%w: chunk location does not decode", ErrCorrupt)
	}
	return l, nil
}

// packs is the directory of pack files and the one being written.
type packs struct {
	dir  string
	sync bool // fsync new packs' directory entries and sealed packs

	mu   sync.Mutex
	next uint64   // number of the next pack to create
	cur  *os.File // the pack being written, or nil
	id   uint64   // its number
	size int64    // its length
}

func packName(id uint64) string { return fmt.Sprintf("%016x%s", id, packSuffix) }

// openPacks opens the pack directory in dir. New packs are numbered
// after the greatest that exists. A number may come back after its pack
// was deleted, but only once no index entry names it: entries are
// deleted (and made durable) before their pack.
func openPacks(dir string, sync bool) (*packs, error) {
	p := &packs{dir: filepath.Join(dir, packDirName), sync: sync, next: 1}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	sizes, err := p.list()
	if err != nil {
		return nil, err
	}
	for id := range sizes {
		p.next = max(p.next, id+1)
	}
	return p, nil
}

// list returns the length of every pack, by number.
func (p *packs) list() (map[uint64]int64, error) {
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

// add appends an entry for the bytes z (compressed from ulen bytes with
// hash h) to the pack being written, starting one if needed, and
// returns where it went. The bytes are in the kernel's page cache when
// add returns (they survive the process being killed); flush makes
// them durable.
//
// A failed write (the filesystem is full) is cut back off the pack, so
// the pack stays a sequence of whole entries.
func (p *packs) add(h [32]byte, ulen int, z []byte) (loc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && p.size >= packTarget {
		if err := p.sealLocked(); err != nil {
			return loc{}, err
		}
	}
	if p.cur == nil {
		if err := p.startLocked(); err != nil {
			return loc{}, err
		}
	}
	e := make([]byte, entryHeader, entryHeader+len(z))
	copy(e, h[:])
	binary.LittleEndian.PutUint32(e[32:], uint32(ulen))
	binary.LittleEndian.PutUint32(e[36:], uint32(len(z)))
	e = append(e, z...)
	l := loc{pack: p.id, off: p.size, n: uint32(len(z))}
	if _, err := p.cur.WriteAt(e, p.size); err != nil {
		// Whatever part was written goes again; if even that fails
		// the pack is sealed with a torn tail, which is never indexed
		// and counts as unused space (reclaim.go).
		if terr := p.cur.Truncate(p.size); terr != nil {
			p.sealLocked()
		}
		return loc{}, fmt.Errorf("journal: write pack: %w", err)
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
func (p *packs) startLocked() error {
	id := p.next
	f, err := os.OpenFile(filepath.Join(p.dir, packName(id)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
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
	p.cur, p.id, p.size = f, id, packHeader
	return nil
}

// sealLocked closes the pack being written; nothing is added to it
// again.
func (p *packs) sealLocked() error {
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

// seal closes the pack being written, if any, and returns the number
// every pack below which is sealed: nothing is added to them again.
func (p *packs) seal() (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, p.sealLocked()
}

// syncPack makes pack id durable on disk, sealed or not.
func (p *packs) syncPack(id uint64) error {
	f, err := os.Open(filepath.Join(p.dir, packName(id)))
	if err != nil {
		return fmt.Errorf("journal: sync pack: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: sync pack: %w", err)
	}
	return nil
}

// flush makes what was added so far durable on disk.
func (p *packs) flush() error {
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

// read returns the stored bytes of the entry at l, checking that it is
// the entry of hash h.
func (p *packs) read(l loc, h [32]byte) ([]byte, error) {
	if l.size() > packMaxEntry {
		return nil, fmt.Errorf("%w: chunk location of %d bytes", ErrCorrupt, l.n)
	}
	f, err := os.Open(filepath.Join(p.dir, packName(l.pack)))
	if errors.Is(err, os.ErrNotExist) {
		// The index names the pack, and packs are deleted only once
		// it names nothing in them (reclaim.go): this one was lost.
		// Not the error's ENOENT, which would read as "no such path".
		return nil, fmt.Errorf("%w: pack %s, which holds chunk %x, is missing", ErrDamaged, packName(l.pack), h[:6])
	}
	if err != nil {
		return nil, fmt.Errorf("journal: pack of chunk %x: %w", h[:6], err)
	}
	defer f.Close()
	e := make([]byte, l.size())
	if _, err := f.ReadAt(e, l.off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: pack %s ends before chunk %x", ErrCorrupt, packName(l.pack), h[:6])
		}
		return nil, fmt.Errorf("journal: read pack: %w", err)
	}
	if [32]byte(e[:32]) != h || binary.LittleEndian.Uint32(e[36:]) != l.n {
		return nil, fmt.Errorf("%w: pack %s holds another chunk where chunk %x should be", ErrCorrupt, packName(l.pack), h[:6])
	}
	return e[entryHeader:], nil
}

// readEntry returns the whole entry (header and stored bytes) at l, to
// copy it into another pack.
func (p *packs) readEntry(f *os.File, l loc, h [32]byte) ([]byte, error) {
	e := make([]byte, l.size())
	if _, err := f.ReadAt(e, l.off); err != nil {
		return nil, fmt.Errorf("journal: read pack %s: %w", packName(l.pack), err)
	}
	if [32]byte(e[:32]) != h {
		return nil, fmt.Errorf("%w: pack %s holds another chunk where chunk %x should be", ErrCorrupt, packName(l.pack), h[:6])
	}
	return e, nil
}

// addEntry appends a whole entry read by readEntry.
func (p *packs) addEntry(e []byte) (loc, error) {
	return p.add([32]byte(e[:32]), int(binary.LittleEndian.Uint32(e[32:])), e[entryHeader:])
}

// remove deletes pack id.
func (p *packs) remove(id uint64) error {
	err := os.Remove(filepath.Join(p.dir, packName(id)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: delete pack: %w", err)
	}
	return nil
}

// close seals the pack being written.
func (p *packs) close() error {
	_, err := p.seal()
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

// hashOf is the hash content is addressed by.
func hashOf(b []byte) [32]byte { return sha256.Sum256(b) }
