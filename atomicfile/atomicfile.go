// Package atomicfile replaces a file atomically: a temporary file in the
// file's own directory, written, synced and renamed over it (renameio).
//
// Left to itself, renameio writes through os.TempDir() whenever that is on
// the file's filesystem: each write then probes the world-writable /tmp
// (two files and a rename), and a podrun killed mid-write leaves its
// temporary file there, where nothing ever removes it. In the file's own
// directory a leftover goes with that directory (a pod's), which is root's.
package atomicfile

import (
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// WriteFile replaces path with data, mode exactly perm (not cut by the
// umask), through a temporary file beside it.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return renameio.WriteFile(path, data, perm,
		renameio.WithTempDir(filepath.Dir(path)),
		renameio.WithStaticPermissions(perm))
}
