package fs

import "golang.org/x/sys/unix"

// backingFlags are the mount options that make the view as permissive
// as the backing filesystem and no more: device nodes open and set-id
// bits take effect on exec in the view exactly where they do in the
// backing directory. (go-fuse mounts nodev,nosuid by default.) This
// gives no one more than the backing directory does: entries are made
// with the caller's credentials (creds.go), so only who may make a
// device node or a set-user-ID file there can make one here.
func backingFlags(root int) []string {
	var st unix.Statfs_t
	if err := unix.Fstatfs(root, &st); err != nil {
		return nil // keep go-fuse's nodev,nosuid
	}
	var opts []string
	if st.Flags&unix.ST_NODEV == 0 {
		opts = append(opts, "dev")
	}
	if st.Flags&unix.ST_NOSUID == 0 {
		opts = append(opts, "suid")
	}
	return opts
}
