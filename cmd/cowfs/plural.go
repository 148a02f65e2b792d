package main

import "fmt"

// count is n and the noun for it: "1 path", "2 paths", "0 paths".
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

// plural is the noun for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
