package agent

import (
	"bufio"
	"os"
	"strings"
)

// cgroup2Mount returns where the daemon's cgroup v2 hierarchy is
// mounted: /sys/fs/cgroup on a unified system, /sys/fs/cgroup/unified
// on a hybrid one.
func cgroup2Mount() (string, bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		before, after, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(after); len(fs) == 0 || fs[0] != "cgroup2" {
			continue
		}
		f := strings.Fields(before)
		if len(f) < 5 || f[3] != "/" {
			continue // a bind mount of part of the hierarchy
		}
		return unescapeMount(f[4]), true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			n := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				n = n*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Cgroup2Mount returns where the cgroup v2 hierarchy is mounted, if it
// is (for tests and tools that make cgroups).
func Cgroup2Mount() (string, bool) { return cgroup2Mount() }
