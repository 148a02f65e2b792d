package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// workFS describes the filesystem the bench works on, for the record
// (results.Machine), and warns of one whose figures do not carry over
// to most machines: ext4 without a journal. Its inode allocator steps
// over every inode freed in the last 60 s (300 s while the inode's
// table block is unwritten), reading each one's deletion time, so a
// run that creates files soon after the last run's tree was removed
// spends much of its time there — natively and in any daemon alike,
// but for as long as it finds freed inodes in its way, which depends
// on what ran before it.
func workFS(dir string) string {
	fstype, source, ok := mountOf(dir)
	if !ok {
		return "work filesystem unknown"
	}
	if fstype != "ext4" {
		return fmt.Sprintf("work on %s (%s)", fstype, source)
	}
	dev := filepath.Base(source)
	task, err := os.ReadFile(filepath.Join("/sys/fs/ext4", dev, "journal_task"))
	if err == nil && strings.TrimSpace(string(task)) == "<none>" {
		fmt.Printf("the work directory is on ext4 without a journal (%s): creating files soon after removing others costs more there than on most machines, natively too (docs/performance.md, \"How the figures are made\"); -work on a journaled filesystem avoids it\n", source)
		return fmt.Sprintf("work on ext4 without a journal (%s)", source)
	}
	return fmt.Sprintf("work on ext4 (%s)", source)
}

// mountOf finds the filesystem type and source of the mount that holds
// dir (util-linux's findmnt, which every Linux with mount has).
func mountOf(dir string) (fstype, source string, ok bool) {
	out, err := exec.Command("findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", dir).Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) != 2 {
		return "", "", false
	}
	return f[0], f[1], true
}
