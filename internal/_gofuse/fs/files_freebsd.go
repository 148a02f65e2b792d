package fs

import "github.com/cowfs/cowfs/internal/_gofuse/fuse"

func setBlocks(out *fuse.Attr) {
}
