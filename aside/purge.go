package aside

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
)

// Purge removes the private directory (Dir, with the aside area and
// everything kept in it) from the backing root rootFd, if it is
// cowfs's: reached without following a link, a directory of the
// daemon's user closed to others, whose id file holds token. With
// token "" (the journal that would name it is gone) a Dir that meets
// the rest and has an id file is taken as cowfs's. It reports whether
// there was one. Nothing is followed on the way down (backing.RemoveAll);
// a Dir that is not cowfs's is left alone with ErrForeign.
//
// Only a workspace no daemon serves may be purged: nothing may be
// moving entries in or out meanwhile.
func Purge(rootFd int, token string) (bool, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(rootFd, Dir, &how)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, foreign("it cannot be opened as a directory without following a link (%v)", err)
	}
	defer unix.Close(fd)
	if err := checkOwn(fd, token); err != nil {
		return false, err
	}
	// Emptied through the descriptor that was checked, then removed by
	// name only if the name still holds it: whoever can write the
	// workspace's root can rename Dir away and put another directory
	// there, and that one is not cowfs's to empty. (Between the last
	// check and rmdir(2) only an empty directory could be swapped in.)
	if err := backing.RemoveContents(fd); err != nil {
		return true, fmt.Errorf("aside: remove %s: %w", Dir, err)
	}
	held, err := backing.Fstat(fd)
	if err != nil {
		return true, fmt.Errorf("aside: %w", err)
	}
	now, _, err := backing.Lstatat(rootFd, Dir)
	if err != nil {
		return true, fmt.Errorf("aside: remove %s: %w", Dir, err)
	}
	if now.Ino != held.Ino || now.Dev != held.Dev {
		return true, fmt.Errorf("aside: remove %s: %w", Dir, ErrReplaced)
	}
	if err := unix.Unlinkat(rootFd, Dir, unix.AT_REMOVEDIR); err != nil {
		return true, fmt.Errorf("aside: remove %s: %w", Dir, err)
	}
	return true, nil
}

// checkOwn is checkPrivate for a Dir about to be removed: it writes
// nothing.
func checkOwn(fd int, token string) error {
	st, err := backing.Fstat(fd)
	if err != nil {
		return fmt.Errorf("aside: %w", err)
	}
	if st.Uid != uint32(unix.Geteuid()) {
		return foreign("it is owned by uid %d", st.Uid)
	}
	if st.Mode&0o077 != 0 {
		return foreign("its mode is %04o; cowfs makes it 0700", st.Mode&0o7777)
	}
	if empty, err := emptyDir(fd); err == nil && empty {
		return nil // made, then a crash before its id: adopted, so removable
	}
	id, err := readFile(fd, "id")
	if err != nil {
		return foreign("it has no readable id file (%v)", err)
	}
	if token != "" && strings.TrimSpace(id) != token {
		return foreign("its id does not match this workspace's journal")
	}
	return nil
}
