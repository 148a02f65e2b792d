package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The delivered-markers file holds one marker key a line. It lives in
// the workspace's cowfs state directory, which only root and the
// daemon's user can change, and never in the workspace: a write there
// during a turn would be the turn's change.

// readDelivered returns the keys in the file at path; none if it is
// missing or unreadable (then a note is handed on again, which is the
// safe side: the model hears twice that files went back).
func readDelivered(path string) map[string]bool {
	done := map[string]bool{}
	if path == "" {
		return done
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return done
	}
	for _, k := range strings.Split(string(b), "\n") {
		if k != "" {
			done[k] = true
		}
	}
	return done
}

// writeDelivered replaces the file at path with keys, through a
// temporary file renamed over it, so a reader sees the old list or the
// new one.
func writeDelivered(path string, keys []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("remembering delivered markers: %w", err)
	}
	_, err = tmp.WriteString(strings.Join(keys, "\n") + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("remembering delivered markers: %w", err)
	}
	return nil
}
