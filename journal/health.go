package journal

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnusable: the journal's directory was deleted, or its filesystem
// went read-only or refused a write outright, while it was open.
// Nothing more is recorded, so no change that needs a record may
// happen; the journal says why.
var ErrUnusable = errors.New("journal is unusable")

// health watches the journal's directory while it is open. Badger
// writes through memory mappings and keeps files open, so it notices a
// deleted directory only when it next makes a file (and then retries
// forever): the journal must notice first, fail every change that
// needs a record from then on, and not let Close wait on Badger.
type health struct {
	dir    int // O_PATH descriptor of the journal directory
	broken atomic.Pointer[error]
	stop   chan struct{}
}

// healthEvery is how often the directory is checked.
const healthEvery = time.Second

func (j *Journal) watch() error {
	fd, err := unix.Open(j.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.health.dir, j.health.stop = fd, make(chan struct{})
	go func() {
		t := time.NewTicker(healthEvery)
		defer t.Stop()
		for {
			select {
			case <-j.health.stop:
				return
			case <-t.C:
				if err := j.check(); err != nil {
					j.fail(err)
					return
				}
			}
		}
	}()
	return nil
}

// check looks at the journal's directory: still linked, still writable.
func (j *Journal) check() error {
	var st unix.Stat_t
	if err := unix.Fstat(j.health.dir, &st); err != nil {
		return fmt.Errorf("journal directory %s: %w", j.dir, err)
	}
	if st.Nlink == 0 {
		return fmt.Errorf("journal directory %s was deleted", j.dir)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(j.health.dir, &fs); err != nil {
		return fmt.Errorf("journal directory %s: %w", j.dir, err)
	}
	if fs.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("the filesystem of journal directory %s is read-only", j.dir)
	}
	// A filesystem can stop taking writes without saying so in its
	// flags: ext4 after an error (errors=remount-ro) only marks itself
	// shut down since Linux 6.6, and its writes fail with EROFS or EIO
	// while statfs shows it writable. Badger then retries its flush
	// forever, and Close would wait on it. So the check also asks for a
	// change that changes nothing — chown to -1:-1, which only sets the
	// directory's ctime — and takes EROFS or EIO as the answer. Other
	// errors (a filesystem that does not let root chown) say nothing
	// about writes and are ignored.
	if err := unix.Fchownat(j.health.dir, "", -1, -1, unix.AT_EMPTY_PATH); refusal(err) {
		return fmt.Errorf("the filesystem of journal directory %s refuses writes (%w)", j.dir, err)
	}
	return nil
}

// refusal reports whether err says the filesystem takes no more writes:
// read-only, or shut down after an error.
func refusal(err error) bool {
	return errors.Is(err, unix.EROFS) || errors.Is(err, unix.EIO)
}

// fail marks the journal unusable for err, and wakes event followers so
// they can tell.
func (j *Journal) fail(err error) {
	err = fmt.Errorf("%w: %w", ErrUnusable, err)
	if j.health.broken.CompareAndSwap(nil, &err) {
		j.log.Error("journal unusable; changes that need a record now fail", "err", err)
		j.wake()
	}
}

// Broken returns why the journal became unusable, or nil.
func (j *Journal) Broken() error {
	if p := j.health.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// usable returns ErrClosed or the reason the journal is unusable, if
// it is; a change must not proceed then.
func (j *Journal) usable() error {
	if j.closed.Load() {
		return ErrClosed
	}
	return j.Broken()
}

// closeHealth stops the watch.
func (j *Journal) closeHealth() {
	if j.health.stop != nil {
		close(j.health.stop)
		unix.Close(j.health.dir)
	}
}
