package rescan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watching the backing directory with fanotify, so that a boundary
// stats what changed rather than every tracked path.
//
// The marks are inode marks on directories: every directory that holds
// a tracked path, or is one, and every directory above them up to the
// root, each marked before what is in it is stat'ed. A mark sees what
// happens to its directory's entries (created, removed, renamed) and,
// with FAN_EVENT_ON_CHILD, to the objects in it (written, attributes,
// closed after writing, for writes through a shared mapping). Not a
// filesystem mark (FAN_MARK_FILESYSTEM): the backing directory is often
// on the root filesystem, and every change anywhere on it — and every
// write the mount itself makes — would be queued for the daemon to read
// and throw away. Not a mount mark: changes that bypass the mount come
// through other mounts of the filesystem, and mount marks see no
// creations, removals or renames. Inode marks queue only what happens
// in the directories that hold tracked paths, whatever else the
// filesystem is doing.
//
// Events report the directory's file handle and the entry's name
// (FAN_REPORT_DFID_NAME). A handle is only ever compared with the
// handles of the directories the scanner marked, which it opened itself
// beneath the root without following a link: the daemon never opens a
// handle an event carries, and an event can name nothing the scanner
// did not choose to watch. The names are entries of those directories:
// a name that is not one component ("", "..", a slash) makes the next
// scan a full one. Events caused by the daemon itself — what the mount
// does for the processes it serves, a rollback's steps — are dropped
// as they are read: the records explain them.
//
// An event is a hint, never a finding: the scan stats the paths the
// events name, with everything beneath a directory they name, and
// judges each exactly as a full scan would. When a hint may have been
// lost, the next scan is a full one: the kernel's queue overflowed,
// more distinct entries changed than the watcher keeps (maxDirty), an
// event named a directory the scanner does not know, or a mark could
// not be placed.
//
// What a watched scan cannot see that a full scan would: a write
// through a shared mapping made after the writer closed its last
// descriptor of the file (the kernel reports writes, and closes after
// writing, not page faults); and a write to a tracked file through
// another name of it, in a directory that holds no tracked path (a
// hard link made behind the mount), which no mark sees — both until
// the next full scan. (A changed file with more names than the scan
// met and the aside area holds makes the scan a full one.) Each watched
// directory keeps its inode in the kernel's cache (the mark holds it);
// directories that no longer hold tracked paths stay marked until the
// next full scan, which runs once they more than double. A fingerprint
// whose path left the window is dropped when a scan next meets it, or
// at the next full scan, rather than by every scan.

// watchMask is what a mark asks for.
const watchMask = unix.FAN_MODIFY | unix.FAN_ATTRIB | unix.FAN_CLOSE_WRITE |
	unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO |
	unix.FAN_DELETE_SELF | unix.FAN_MOVE_SELF | unix.FAN_ONDIR | unix.FAN_EVENT_ON_CHILD

// maxDirty bounds the entries the watcher holds between scans; past
// it, the next scan is a full one, which costs no more by then.
const maxDirty = 1 << 16

// watcher holds a fanotify group and what its events named since the
// last scan.
type watcher struct {
	fd   int
	self int // the pid whose events are the daemon's own
	stop [2]int
	done chan struct{}

	mu    sync.Mutex                 // guards what follows, and reading fd
	dirs  map[string]string          // handle key -> the directory marked with it
	dirty map[string]map[string]bool // handle key -> entry names -> named as a directory
	n     int                        // names in dirty
	lost  string                     // why hints may be missing since the last scan ("": none)
	buf   []byte
}

// newWatcher opens a fanotify group that reports directory handles and
// names, and starts reading it.
func newWatcher(self int) (*watcher, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME,
		unix.O_RDONLY|unix.O_CLOEXEC|unix.O_LARGEFILE)
	if err != nil {
		return nil, fmt.Errorf("rescan: fanotify: %w", err)
	}
	w := &watcher{fd: fd, self: self, done: make(chan struct{}), dirs: map[string]string{},
		dirty: map[string]map[string]bool{}, buf: make([]byte, 64<<10)}
	if err := unix.Pipe2(w.stop[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("rescan: fanotify: %w", err)
	}
	go w.run()
	return w, nil
}

// run reads events as they come, so that the kernel's queue holds what
// arrived since the last read, not since the last scan: the mount's own
// changes, the most numerous, are dropped at once.
func (w *watcher) run() {
	defer close(w.done)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stop[0]), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			w.mu.Lock()
			w.lose("reading fanotify events: " + err.Error())
			w.mu.Unlock()
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		w.mu.Lock()
		w.drain()
		w.mu.Unlock()
	}
}

// close stops the reader and closes the group, which removes its marks.
func (w *watcher) close() {
	w.halt()
	unix.Close(w.fd)
	unix.Close(w.stop[0])
	unix.Close(w.stop[1])
}

// halt stops the reader: events stay queued until a scan takes them.
func (w *watcher) halt() {
	select {
	case <-w.done:
	default:
		unix.Write(w.stop[1], []byte{0})
		<-w.done
	}
}

// drain reads every queued event. The caller holds mu.
func (w *watcher) drain() {
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				w.lose("reading fanotify events: " + err.Error())
			}
			return
		}
		w.parse(w.buf[:n])
	}
}

// lose notes that hints may be missing, and drops those held: the next
// scan is a full one. The caller holds mu.
func (w *watcher) lose(why string) {
	if w.lost == "" {
		w.lost = why
	}
	clear(w.dirty)
	w.n = 0
}

const metadataLen = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

// parse takes the events in b. The caller holds mu.
func (w *watcher) parse(b []byte) {
	for len(b) >= metadataLen {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
		if m.Vers != unix.FANOTIFY_METADATA_VERSION || int(m.Event_len) < metadataLen || int(m.Event_len) > len(b) {
			w.lose("a fanotify event of an unknown form")
			return
		}
		ev := b[:m.Event_len]
		b = b[m.Event_len:]
		if m.Fd >= 0 {
			unix.Close(int(m.Fd)) // never asked for; never used
		}
		switch {
		case m.Mask&unix.FAN_Q_OVERFLOW != 0:
			w.lose("the kernel's event queue overflowed")
			continue
		case int(m.Pid) == w.self || w.lost != "":
			continue
		}
		w.event(m.Mask, ev[m.Metadata_len:])
	}
}

// event takes the information records of one event.
func (w *watcher) event(mask uint64, info []byte) {
	named := false
	for len(info) >= 4 {
		typ, n := info[0], int(binary.NativeEndian.Uint16(info[2:]))
		if n < 4 || n > len(info) {
			break
		}
		rec := info[4:n]
		info = info[n:]
		if typ != unix.FAN_EVENT_INFO_TYPE_DFID_NAME && typ != unix.FAN_EVENT_INFO_TYPE_DFID {
			continue
		}
		// fsid, then struct file_handle, then (DFID_NAME) the name.
		if len(rec) < 16 {
			break
		}
		hlen := int(binary.NativeEndian.Uint32(rec[8:]))
		if 16+hlen > len(rec) {
			break
		}
		key := string(rec[:16+hlen])
		name := "."
		if typ == unix.FAN_EVENT_INFO_TYPE_DFID_NAME {
			name = cstring(rec[16+hlen:])
		}
		w.add(key, name, mask&unix.FAN_ONDIR != 0)
		named = true
	}
	if !named {
		w.lose("a fanotify event named no directory")
	}
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// add notes that entry name of the directory with handle key changed.
func (w *watcher) add(key, name string, dir bool) {
	names := w.dirty[key]
	if names == nil {
		names = map[string]bool{}
		w.dirty[key] = names
	}
	if was, ok := names[name]; ok {
		names[name] = was || dir
		return
	}
	if w.n >= maxDirty {
		w.lose(fmt.Sprintf("more than %d entries changed outside the mount", maxDirty))
		return
	}
	names[name] = dir
	w.n++
}

// handleKey is the key a directory's events carry: its filesystem's id
// and its file handle, as fanotify lays them out.
func handleKey(fd int) (string, error) {
	h, _, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return "", err
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return "", err
	}
	b := make([]byte, 0, 16+h.Size())
	b = binary.NativeEndian.AppendUint32(b, uint32(sfs.Fsid.Val[0]))
	b = binary.NativeEndian.AppendUint32(b, uint32(sfs.Fsid.Val[1]))
	b = binary.NativeEndian.AppendUint32(b, uint32(h.Size()))
	b = binary.NativeEndian.AppendUint32(b, uint32(h.Type()))
	return string(append(b, h.Bytes()...)), nil
}

// mark watches the directory fd (an O_PATH descriptor the scanner
// opened beneath the root) as rel. The caller holds no lock.
func (w *watcher) mark(fd int, rel string) error {
	if err := unix.FanotifyMark(w.fd, unix.FAN_MARK_ADD|unix.FAN_MARK_ONLYDIR|unix.FAN_MARK_DONT_FOLLOW, watchMask, fd, "."); err != nil {
		return fmt.Errorf("rescan: watch %q: %w", rel, err)
	}
	key, err := handleKey(fd)
	if err != nil {
		return fmt.Errorf("rescan: watch %q: %w", rel, err)
	}
	w.mu.Lock()
	w.dirs[key] = rel
	w.mu.Unlock()
	return nil
}

// watching returns how many directories are marked.
func (w *watcher) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirs)
}

// changedEntry is a path an event named since the last scan.
type changedEntry struct {
	path string
	dir  bool // named as a directory, or the directory itself: what is beneath it too
}

// take returns the paths the events since the last scan named, or why
// some may be missing.
func (w *watcher) take() ([]changedEntry, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drain()
	defer func() {
		clear(w.dirty)
		w.n, w.lost = 0, ""
	}()
	if w.lost != "" {
		return nil, w.lost
	}
	out := make([]changedEntry, 0, w.n)
	for key, names := range w.dirty {
		dir, ok := w.dirs[key]
		if !ok {
			return nil, "an event named a directory the scanner does not watch"
		}
		for name, isDir := range names {
			switch {
			case name == ".":
				out = append(out, changedEntry{dir, true})
			case name == "" || name == ".." || containsSlash(name):
				return nil, fmt.Sprintf("an event named %q in %q", name, dir)
			case dir == "":
				out = append(out, changedEntry{name, isDir})
			default:
				out = append(out, changedEntry{dir + "/" + name, isDir})
			}
		}
	}
	return out, ""
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// reset removes every mark and forgets what was read, before a full
// scan marks again: what happened until then, the full scan sees.
func (w *watcher) reset() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := unix.FanotifyMark(w.fd, unix.FAN_MARK_FLUSH, 0, unix.AT_FDCWD, ""); err != nil {
		return fmt.Errorf("rescan: fanotify: remove marks: %w", err)
	}
	w.drain()
	clear(w.dirs)
	clear(w.dirty)
	w.n, w.lost = 0, ""
	return nil
}
