package fs

import (
	"testing"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
)

// Which writebacks of a node a rollback rewrote are stale: all, until
// reads made after the mark cover them; a read that began before the
// mark covers nothing; a later mark starts over; the mark goes only
// with the invalidation that followed it.
func TestRewritesStale(t *testing.T) {
	var r rewrites
	n, other := &gofs.Inode{}, &gofs.Inode{}
	if _, stale := r.stale(n, 0, 4096); stale {
		t.Fatal("stale with no mark")
	}

	before := r.markOf(n) // a READ that began before the rollback
	r.mark(n, "f")
	if p, stale := r.stale(n, 0, 4096); !stale || p != "f" {
		t.Fatalf("after the mark: stale %v, path %q", stale, p)
	}
	if _, stale := r.stale(other, 0, 4096); stale {
		t.Fatal("another node is stale")
	}
	r.read(n, before, 0, 8192)
	if _, stale := r.stale(n, 0, 4096); !stale {
		t.Fatal("a read that began before the mark made a page fresh")
	}

	gen := r.markOf(n)
	r.read(n, gen, 0, 4096)
	if _, stale := r.stale(n, 0, 4096); stale {
		t.Fatal("a page read after the mark is stale")
	}
	if _, stale := r.stale(n, 0, 8192); !stale {
		t.Fatal("a writeback of a fresh and a stale page passes")
	}

	// A later step rewrites the file again: what was read is stale.
	r.mark(n, "f")
	if _, stale := r.stale(n, 0, 4096); !stale {
		t.Fatal("a page read before a second mark is fresh")
	}
	r.read(n, gen, 0, 4096) // began under the first mark
	if _, stale := r.stale(n, 0, 4096); !stale {
		t.Fatal("a read that began under the first mark counts for the second")
	}

	// An invalidation that began before the second mark does not clear it.
	r.dropped(n, gen)
	if _, stale := r.stale(n, 0, 4096); !stale {
		t.Fatal("cleared by an invalidation older than the mark")
	}
	r.dropped(n, r.markOf(n))
	if _, stale := r.stale(n, 0, 4096); stale || r.n.Load() != 0 {
		t.Fatal("not cleared by the invalidation after the mark")
	}
}
