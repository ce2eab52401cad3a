package volumes

import (
	"errors"
	"io/fs"
)

// DiskUsage is the space the tree under dir takes on disk, in bytes, as
// `du -sx` counts it (and the kubelet's du-based volume metrics): allocated
// blocks rather than apparent sizes (a sparse file counts what it holds),
// symlinks not followed, a file with several hard links counted once, and
// nothing below a mount point of another filesystem. The tree is walked by
// descriptor without following symlinks (walk.go), so a container swapping
// a directory for a symlink never makes it count, or read, anything outside
// the volume; entries that vanish meanwhile are skipped. However deep the
// tree, the walk holds a bounded number of descriptors; a part it cannot
// read is an error, never left out. A walk that finds a directory moved
// under it (a container renaming its tree) is tried again, twice.
func DiskUsage(dir string) (int64, error) {
	for try := 0; ; try++ {
		n, err := diskUsage(dir)
		if !errors.Is(err, errMoved) || try == 2 {
			return n, err
		}
	}
}

func diskUsage(dir string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	var rootDev uint64
	first := true
	err := walk(dir, func(e *entry) error {
		st := &e.stat
		if first {
			rootDev, first = uint64(st.Dev), false
		}
		if uint64(st.Dev) != rootDev {
			// Another filesystem mounted below (du -x): neither it nor,
			// for a directory, anything under it is counted.
			if e.isDir() {
				return fs.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !e.isDir() {
			key := inode{uint64(st.Dev), st.Ino}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		total += st.Blocks * 512 // st_blocks is in 512-byte units whatever the block size
		return nil
	})
	return total, err
}
