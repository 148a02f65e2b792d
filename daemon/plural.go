package daemon

import "fmt"

// count is n and the noun for it: "1 path", "2 paths". Messages a
// person reads (notes, errors, the log) say it right for one.
func count(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
