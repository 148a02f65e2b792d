// Command fsx runs the stress package's verifying exerciser on files in
// a directory, one goroutine per file, and exits non-zero on the first
// verification error (test/stress/run.sh runs it on a cowfs mount).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cowfs/cowfs/test/stress"
)

func main() {
	dir := flag.String("dir", ".", "directory to exercise files in")
	files := flag.Int("files", 4, "files exercised in parallel")
	ops := flag.Int("ops", 10000, "operations per file")
	seed := flag.Int64("seed", 1, "seed of the first file (the others follow)")
	size := flag.Int64("size", 1<<20, "largest file size")
	flag.Parse()
	var wg sync.WaitGroup
	errs := make([]error, *files)
	for i := range *files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, err := stress.New(filepath.Join(*dir, fmt.Sprintf("fsx.%d", i)), stress.Options{Seed: *seed + int64(i), MaxSize: *size})
			if err != nil {
				errs[i] = err
				return
			}
			if err := x.Run(*ops); err != nil {
				errs[i] = err
			}
			if err := x.Close(); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	failed := false
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, "fsx:", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Printf("fsx: %d files, %d operations each, 0 verification errors\n", *files, *ops)
}
