package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DiskUsage is the space the tree under dir takes on disk, in bytes, as
// `du -sx` counts it (and the kubelet's du-based volume metrics): allocated
// blocks rather than apparent sizes (a sparse file counts what it holds),
// symlinks not followed, a file with several hard links counted once, and
// nothing below a mount point of another filesystem. Entries that vanish
// while the tree is walked are skipped: a container keeps writing meanwhile.
func DiskUsage(dir string) (int64, error) {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		return 0, &fs.PathError{Op: "lstat", Path: dir, Err: err}
	}
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return &fs.PathError{Op: "lstat", Path: path, Err: err}
		}
		if uint64(st.Dev) != uint64(root.Dev) {
			// Another filesystem mounted below (du -x): neither it nor,
			// for a directory, anything under it is counted.
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
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
