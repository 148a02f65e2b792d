package e2e

import "testing"

// The status says when, and why, a boundary's rescan stat'ed every
// tracked path instead of what the kernel reported changed (#34: fall
// back to a full scan and say so): the start-up scan is a full one, the
// boundaries after it are watched; with --no-fanotify every scan is
// full.
func TestStatusSaysFullScan(t *testing.T) {
	for _, c := range []struct {
		flags       []string
		start, next string
	}{
		{nil, "nothing was watching", ""},
		{[]string{"--no-fanotify"}, "not watching", "not watching"},
	} {
		w := newWorkspace(t)
		w.seed(map[string]string{"f": "0\n"})
		w.mount(c.flags...)
		if got := w.status().FullScan; got != c.start {
			t.Errorf("%v: after start-up: full_scan %q, want %q", c.flags, got, c.start)
		}
		w.cowfs("turn", "begin")
		w.sh("echo 1 > f")
		w.cowfs("turn", "end")
		if got := w.status().FullScan; got != c.next {
			t.Errorf("%v: after a turn: full_scan %q, want %q", c.flags, got, c.next)
		}
		w.umount()
	}
}
