package fs

import "golang.org/x/sys/unix"

// mountFlags are the view's nosuid and nodev options. By default the
// view is as permissive as the backing filesystem and no more: device
// nodes open and set-id bits take effect on exec in the view exactly
// where they do in the backing directory (go-fuse alone would mount
// nodev,nosuid). That gives no one more than the backing directory
// does: entries are made with the caller's credentials (creds.go), so
// only who may make a device node or a set-user-ID file there can make
// one here. noSuid and noDev turn each off whatever the backing
// filesystem allows, for a view whose users are not trusted with what
// the workspace holds (cowfs run).
func mountFlags(root int, noSuid, noDev bool) []string {
	suid, dev := "nosuid", "nodev"
	var st unix.Statfs_t
	if err := unix.Fstatfs(root, &st); err != nil {
		return []string{suid, dev}
	}
	if !noDev && st.Flags&unix.ST_NODEV == 0 {
		dev = "dev"
	}
	if !noSuid && st.Flags&unix.ST_NOSUID == 0 {
		suid = "suid"
	}
	return []string{suid, dev}
}
