package fs

import (
	"context"
	"errors"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

var _ = (gofs.NodeSetattrer)((*Node)(nil))

// Setattr journals the attributes before the first change in the epoch
// and, for a truncation, the bytes it cuts off. This is also how
// `echo x > existing` arrives: OPEN without O_TRUNC, then SETATTR
// size=0.
func (n *Node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, truncates := in.GetSize()
	if truncates && n.typ() != syscall.S_IFREG {
		return syscall.EINVAL
	}
	c := n.fs.rec.begin(ctx, n.writer())
	defer c.end()
	file := -1 // a descriptor to truncate through, and read what it cuts off
	if truncates {
		fd, done, e := n.ioFile(syscall.O_RDWR)
		if e != 0 {
			return e
		}
		defer done()
		file = fd
	}
	fd, done, e := n.inode()
	if e != 0 {
		return e
	}
	defer done()

	mode, setsMode := in.GetMode()
	uid, setsUID := in.GetUID()
	gid, setsGID := in.GetGID()
	cause := journal.CauseTimes
	lo := capture.ToEnd
	switch {
	case truncates:
		cause, lo = journal.CauseTruncate, int64(size)
	case setsUID || setsGID:
		cause = journal.CauseOwner
	case setsMode:
		cause = journal.CauseMode
	}
	if err := n.beforeContent(c, file, lo, capture.ToEnd, cause); err != nil {
		return c.fail(err)
	}
	n.changing()
	// Each step that fails ends the change (fail): its records are
	// withdrawn if it is the first to reach the backing file, kept
	// if an earlier one changed something (did).
	if setsMode {
		if err := c.did(backing.Chmod(fd, mode)); err != nil {
			return c.fail(err)
		}
	}
	if setsUID || setsGID {
		u, g := -1, -1
		if setsUID {
			u = int(uid)
		}
		if setsGID {
			g = int(gid)
		}
		if err := c.did(backing.Chown(fd, u, g)); err != nil {
			return c.fail(err)
		}
	}
	// Truncate before setting times, so an explicit mtime is not
	// clobbered by the truncation.
	if truncates {
		if err := c.did(unix.Ftruncate(file, int64(size))); err != nil {
			return c.fail(err)
		}
	}
	if in.Valid&(fuse.FATTR_ATIME|fuse.FATTR_MTIME) != 0 {
		if err := c.did(backing.Utimens(fd, setTime(in, fuse.FATTR_ATIME), setTime(in, fuse.FATTR_MTIME))); err != nil {
			return c.fail(err)
		}
	}
	st, err := backing.Fstat(fd)
	if err != nil {
		return c.fail(err)
	}
	if in.Valid&fuse.FATTR_KILL_SUIDGID != 0 && !setsMode && c.who().uid != 0 {
		if perm, kill := withoutSetID(st, c.who()); kill {
			if err := c.did(backing.Chmod(fd, perm)); err != nil {
				return c.fail(err)
			}
			st.Mode = st.Mode&syscall.S_IFMT | perm
		}
	}
	n.attrOut(&out.Attr, st)
	// go-fuse sets the attribute timeout of GETATTR answers, not of
	// SETATTR's: without this the kernel would ask again at the next
	// stat.
	out.SetTimeout(n.fs.cacheTimeout)
	n.answered(st.Mtim.Nano(), st.Size)
	return 0
}

// setTime is the timespec SETATTR in asks for one time (FATTR_ATIME or
// FATTR_MTIME): omitted, now, or the given time.
func setTime(in *fuse.SetAttrIn, which uint32) unix.Timespec {
	now, sec, nsec := uint32(fuse.FATTR_ATIME_NOW), in.Atime, in.Atimensec
	if which == fuse.FATTR_MTIME {
		now, sec, nsec = fuse.FATTR_MTIME_NOW, in.Mtime, in.Mtimensec
	}
	switch {
	case in.Valid&which == 0:
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	case in.Valid&now != 0:
		return unix.Timespec{Nsec: unix.UTIME_NOW}
	}
	return unix.Timespec{Sec: int64(sec), Nsec: int64(nsec)}
}

var _ = (gofs.NodeSetxattrer)((*Node)(nil))

func (n *Node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.changeXattr(ctx, attr, func(fd int) error { return backing.Setxattr(fd, attr, data, int(flags)) })
}

var _ = (gofs.NodeRemovexattrer)((*Node)(nil))

func (n *Node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.changeXattr(ctx, attr, func(fd int) error { return backing.Removexattr(fd, attr) })
}

// changeXattr journals xattr attr's old value, then has change change it
// through a descriptor of n.
func (n *Node) changeXattr(ctx context.Context, attr string, change func(fd int) error) syscall.Errno {
	fd, done, e := n.inode()
	if e != 0 {
		return e
	}
	defer done()
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	if err := n.beforeXattr(c, fd, attr); err != nil {
		return c.fail(err)
	}
	if err := c.did(change(fd)); err != nil {
		return c.fail(err) // REMOVEXATTR of a missing name, say: ENODATA
	}
	return 0
}

// beforeXattr journals the old value of xattr name of n (descriptor fd),
// or that it did not exist, before its first change in the epoch, and
// the attributes too: an ACL xattr changes the mode.
func (n *Node) beforeXattr(c *change, fd int, name string) error {
	if err := n.beforeContent(c, -1, 0, 0, journal.CauseXattr); err != nil {
		return err
	}
	id := n.StableAttr().Ino
	s := c.state(id)
	defer s.Unlock()
	if s.Created() {
		return nil
	}
	rel, ok := n.rel()
	if !ok {
		return nil
	}
	return c.op.Xattr(s, id, rel, n.typ(), name, func() ([]byte, bool, error) {
		val, exists, err := backing.Getxattr(fd, name)
		if err != nil && !errors.Is(err, unix.ENOTSUP) {
			return nil, false, err
		}
		return val, exists, nil
	})
}
