package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// pauseEnv names the test hook that stops a rollback between two steps,
// so a test can act at an exact point (kill the daemon, send a second
// request) instead of racing a running rollback. Its value is "N:DIR":
// after step N the executor creates DIR/paused and waits until
// DIR/resume exists. Unset, rollbacks never pause.
const pauseEnv = "COWFS_TEST_ROLLBACK_PAUSE"

// pauseHook returns the AfterStep hook pauseEnv asks for, or nil.
func pauseHook() (func(step int), error) {
	v := os.Getenv(pauseEnv)
	if v == "" {
		return nil, nil
	}
	n, dir, ok := strings.Cut(v, ":")
	after, err := strconv.Atoi(n)
	if !ok || err != nil || after < 1 || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s=%q: want N:/absolute/dir with N >= 1", pauseEnv, v)
	}
	return func(step int) {
		if step != after {
			return
		}
		os.WriteFile(filepath.Join(dir, "paused"), nil, 0o644)
		for {
			if _, err := os.Stat(filepath.Join(dir, "resume")); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}, nil
}
