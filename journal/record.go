package journal

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Kind says what a record undoes.
type Kind uint8

const (
	// KindCreate: Path did not exist before; an entry of Type was
	// created there (file, directory, symlink, device, fifo, socket).
	// Undo: remove Path.
	KindCreate Kind = 1

	// KindLink: Path did not exist before; it became a new hard link
	// to the inode then at Path2. Undo: unlink Path.
	KindLink Kind = 2

	// KindAttr: the first change in this epoch to the inode at Path.
	// Attr holds its attributes just before. Cause says which
	// operation triggered it. Undo: truncate to Attr.Size, chmod,
	// chown, set atime and mtime.
	KindAttr Kind = 3

	// KindData: the bytes [Off, Off+Len) of the inode at Path, as they
	// were just before an operation overwrote or cut them off: Chunks
	// hold the bytes outside Holes, in order; Holes were holes (they
	// read as zeros). Undo: write the bytes back and punch the holes.
	KindData Kind = 4

	// KindXattr: extended attribute XattrName of the inode at Path
	// had XattrValue (or did not exist, if !XattrExisted). Undo: set
	// or remove it.
	KindXattr Kind = 5

	// KindRemove: Path (unlinked or removed directory) was moved
	// aside to Aside, with its inode, content and attributes intact.
	// Undo: move Aside back to Path.
	KindRemove Kind = 6

	// KindRename: Path was renamed to Path2 with renameat2 Flags. If a
	// target at Path2 was replaced (Ino2), it was kept aside as Aside —
	// unless it was new in the same epoch, when it is gone. Undo:
	// rename Path2 back to Path (exchange again for RENAME_EXCHANGE),
	// then move Aside back to Path2.
	KindRename Kind = 7

	// KindEvent is not a change: a turn began or ended, a step began, a
	// rollback or an unrevert happened (see event.go). Path names the
	// event; Detail holds its JSON. Undo: nothing.
	KindEvent Kind = 8

	// KindOutside: Path was found changed outside the mount (package
	// rescan) — by the host side of a sandbox, another mount namespace,
	// or while cowfs was not running. Cause says how; Type, Ino and
	// Attr describe what is there now (before, for a deletion). What it
	// destroyed is unknown: undo is impossible, and a rollback treats
	// the path as a conflict.
	KindOutside Kind = 9
)

var kindNames = map[Kind]string{
	KindCreate:  "create",
	KindLink:    "link",
	KindAttr:    "attr",
	KindData:    "data",
	KindXattr:   "xattr",
	KindRemove:  "remove",
	KindRename:  "rename",
	KindEvent:   "event",
	KindOutside: "outside",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Cause says which operation made the first change to an inode in an
// epoch (KindAttr) — the record alone cannot tell a chmod from a write.
type Cause uint8

const (
	CauseWrite    Cause = 1 // write, O_TRUNC, fallocate: content changes
	CauseTruncate Cause = 2 // size set by truncate/ftruncate
	CauseMode     Cause = 3 // chmod
	CauseOwner    Cause = 4 // chown
	CauseTimes    Cause = 5 // utimes, touch
	CauseXattr    Cause = 6 // setxattr, removexattr
	CauseDirent   Cause = 7 // an entry of this directory was added, removed or renamed

	// KindOutside causes.
	CauseOutsideModified Cause = 8  // content or attributes changed in place
	CauseOutsideDeleted  Cause = 9  // gone
	CauseOutsideCreated  Cause = 10 // appeared where nothing was
	CauseOutsideReplaced Cause = 11 // another object, or another type, is there
)

// Content reports whether the cause changes file content.
func (c Cause) Content() bool { return c == CauseWrite || c == CauseTruncate }

// Caller identifies the process that made a change.
type Caller struct {
	Pid  uint32
	Uid  uint32
	Gid  uint32
	Comm string // /proc/PID/comm at the time of the request
	// Cmdline is the command line, /proc/PID/cmdline at the time of the
	// request: arguments joined by spaces, control bytes and bytes that
	// are not UTF-8 escaped (\xNN), cut to at most 256 bytes ending in
	// "…". Empty if it could not be read (a kernel thread, a process
	// gone), and in records of version 3 and before.
	Cmdline string
}

// Attr are the attributes of an inode that an undo restores.
type Attr struct {
	Mode  uint32 // type and permission bits, as st_mode
	Uid   uint32
	Gid   uint32
	Size  int64
	Nlink uint32
	Atime int64 // nanoseconds since the Unix epoch
	Mtime int64
}

// Chunk names one stored piece of content.
type Chunk struct {
	Hash [32]byte // SHA-256 of the uncompressed bytes
	Size uint32   // uncompressed length
}

// Hole is the byte range [Off, Off+Len) of a file that was a hole: it
// read as zeros and took no space, and a data record keeps no bytes
// for it.
type Hole struct{ Off, Len int64 }

// Record is one journaled change. Paths are relative to the backing
// directory's root, slash-separated, never starting with "/" or "..".
// An inode kept aside is written to through a path in the aside area
// (see package aside), so such paths appear in records too.
type Record struct {
	Seq  uint64 // key; assigned by Append
	Turn uint64 // 0: outside a turn
	// Group is the rollback that made this change (see Rollback), or 0
	// for a change made through the mount. A group's records exist
	// only so the rollback can be undone (unrevert).
	Group uint64
	Step  string // the harness's tool-call id, if it marked one
	Time  time.Time

	Kind  Kind
	Cause Cause  // KindAttr only
	Type  uint32 // S_IFMT bits of the object changed
	Ino   uint64 // identity of the object changed (see InodeID)
	Ino2  uint64 // KindRename: identity of the target it replaced, if any (with RENAME_EXCHANGE: the other object)

	Path  string
	Path2 string // KindRename: new name; KindLink: existing name
	Aside string // KindRemove, KindRename: name in the aside area
	Flags uint32 // KindRename: renameat2 flags

	Caller Caller
	// NotAgent: made during turn Turn by a process outside the turn's
	// agent scope (Turn.Agent) — a person's editor, another tool. It is
	// journaled, so its pre-image exists, but it is not the turn's: a
	// rollback treats it as a change made outside a turn.
	NotAgent bool

	Attr Attr // KindAttr; KindRemove and KindRename: of the object kept aside

	Off    int64 // KindData
	Len    int64
	Chunks []Chunk // the bytes of [Off, Off+Len) outside Holes, in order
	Holes  []Hole  // sorted, disjoint, non-empty, within [Off, Off+Len)

	XattrName    string // KindXattr
	XattrValue   []byte
	XattrExisted bool

	Detail []byte // KindEvent: JSON

	// Stored is the number of bytes this record added to the journal:
	// its own encoding and the chunks it was the first to store.
	Stored int64
}

// InodeID is the identity records give an inode: its number, mixed
// with its device's when that is not the backing root's, so that files
// of a filesystem mounted inside the workspace never share an identity
// with the workspace's own. (It is the inode number go-fuse's loopback
// reports.) Moving removed inodes aside keeps every identity in the
// window unique: an inode is not freed, so its number is not reused,
// before its records leave the window.
func InodeID(dev, ino, rootDev uint64) uint64 {
	swap := func(d uint64) uint64 { return d<<32 | d>>32 }
	return swap(dev) ^ swap(rootDev) ^ ino
}

// Bytes is the size of the pre-image the record holds or keeps aside;
// for a data record, the range it covers, holes included.
func (r *Record) Bytes() int64 {
	switch r.Kind {
	case KindData:
		return r.Len
	case KindRemove:
		return r.Attr.Size
	case KindRename:
		if r.Aside != "" {
			return r.Attr.Size
		}
	case KindXattr:
		return int64(len(r.XattrValue))
	}
	return 0
}

// AttrOf returns the attributes a record keeps of an inode with stat st.
func AttrOf(st *unix.Stat_t) Attr {
	return Attr{Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Size: st.Size, Nlink: uint32(st.Nlink),
		Atime: st.Atim.Nano(), Mtime: st.Mtim.Nano()}
}
