package main

import (
	"errors"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminal is the controlling terminal cowfs run lent the command: its
// process group is the terminal's foreground while it runs, so ^C, ^\,
// ^Z and window changes reach it alone, as they reach a shell's job.
// A nil *terminal lent nothing (no terminal, or cowfs run was itself in
// the background).
type terminal struct {
	own, pgid int // this process's group; the command's
}

// takeTerminal makes the process group pgid the terminal's foreground,
// if standard input is a terminal whose foreground is this process's
// group. This process is then in the foreground: the kernel lets it.
func takeTerminal(pgid int) *terminal {
	own := syscall.Getpgrp()
	if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err != nil || fg != own {
		return nil
	}
	if err := unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pgid); err != nil {
		return nil
	}
	return &terminal{own: own, pgid: pgid}
}

// giveBack makes this process's group the foreground again. It is in
// the background now, where the kernel stops a group that takes the
// terminal unless it ignores SIGTTOU.
func (t *terminal) giveBack() {
	if t == nil {
		return
	}
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, t.own)
}

// lendAgain makes the command's group the foreground again.
func (t *terminal) lendAgain() {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, t.pgid)
}

// waitCommand waits for the command pid to exit. If it stops while it
// has the terminal (^Z), cowfs run stops too — the terminal back with
// its group, the whole group stopped — so the shell that started it
// sees its job stopped; when the shell continues it (fg, bg), the
// command gets the terminal back and continues.
func waitCommand(pid int, tty *terminal) (syscall.WaitStatus, error) {
	flags := 0
	if tty != nil {
		flags = syscall.WUNTRACED
	}
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, flags, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || !ws.Stopped() {
			return ws, err
		}
		tty.giveBack()
		syscall.Kill(0, syscall.SIGSTOP) // this process's group: also cowfs run above
		// Continued. In the foreground (fg) the command gets the
		// terminal; in the background (bg) it runs without it.
		if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil && fg == tty.own {
			tty.lendAgain()
		}
		syscall.Kill(-tty.pgid, syscall.SIGCONT)
	}
}
