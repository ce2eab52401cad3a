package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FileProjection is one file of a config volume: its content and mode,
// and the user owning it (the file and its top-level link), when set.
type FileProjection struct {
	Data   []byte
	Mode   os.FileMode
	FsUser *int64
}

// The kubelet's atomic writer layout (pkg/volume/util/atomic_writer.go):
//
//	<dir>/..2026_11_22_06_30_00.123456789/  the files, written once, never changed
//	<dir>/..data -> ..2026_11_22_06_30_00.123456789
//	<dir>/key -> ..data/key                  one symlink per top-level entry
//
// An update writes a new timestamped directory and swaps ..data by renaming
// a new symlink over it, so that a reader sees either the old or the new set
// of files, never a half-written file nor a mix of versions (a reader that
// resolves ..data once reads one version throughout).
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	tsDirFormat    = "..2006_01_02_15_04_05."
)

// AtomicWrite makes the files of dir the payload (relative path -> file)
// with the kubelet's atomic writer layout. setPerms, when not nil, runs on
// dir once the new files are written and before they become visible
// (fsGroup). A payload equal to what dir holds changes nothing; changed
// reports whether the files changed.
func AtomicWrite(dir string, payload map[string]FileProjection, setPerms func() error) (changed bool, err error) {
	for p := range payload {
		if err := validatePayloadPath(p); err != nil {
			return false, err
		}
	}
	oldTs, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	var stale []string
	if oldTs != "" {
		if stale, err = stalePaths(filepath.Join(dir, oldTs), payload); err != nil {
			return false, err
		}
		same, err := sameFiles(filepath.Join(dir, oldTs), payload)
		if err != nil {
			return false, err
		}
		if same && len(stale) == 0 {
			return false, nil
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format(tsDirFormat))
	if err != nil {
		return false, err
	}
	ts := filepath.Base(tsDir)
	// Group and other must be able to enter it, whatever the umask.
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, err
	}
	if err := writePayload(tsDir, payload); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	if setPerms != nil {
		if err := setPerms(); err != nil {
			os.RemoveAll(tsDir)
			return false, err
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) { // left by a crash
		return false, err
	}
	if err := os.Symlink(ts, tmpLink); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		os.Remove(tmpLink)
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := createVisible(dir, payload); err != nil {
		return true, err
	}
	for _, p := range stale {
		if strings.Contains(p, "/") {
			continue // below a top-level entry: gone with the old directory
		}
		if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, err
		}
	}
	if oldTs != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTs)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// validatePayloadPath refuses paths that would leave the volume or collide
// with the writer's own entries, as the kubelet's validatePath does.
func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path in volume payload")
	case filepath.IsAbs(p):
		return fmt.Errorf("volume path %q is absolute", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("volume path %q starts with '..'", p)
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return fmt.Errorf("volume path %q contains '..'", p)
		}
	}
	return nil
}

// stalePaths lists the paths (files and directories, relative) of the old
// timestamped directory that the new payload does not have.
func stalePaths(oldDir string, payload map[string]FileProjection) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		for q := filepath.Clean(p); q != "."; q = filepath.Dir(q) {
			keep[q] = true
		}
	}
	var stale []string
	err := filepath.WalkDir(oldDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(oldDir, path)
		if err != nil || rel == "." {
			return err
		}
		if !keep[rel] {
			stale = append(stale, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return stale, err
}

// sameFiles reports whether every file of the payload is in oldDir with the
// same content and mode.
func sameFiles(oldDir string, payload map[string]FileProjection) (bool, error) {
	for p, f := range payload {
		path := filepath.Join(oldDir, p)
		info, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !info.Mode().IsRegular() || info.Mode().Perm() != f.Mode.Perm() {
			return false, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(data, f.Data) {
			return false, nil
		}
	}
	return true, nil
}

func writePayload(dir string, payload map[string]FileProjection) error {
	for p, f := range payload {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Data, f.Mode.Perm()); err != nil {
			return err
		}
		// WriteFile honours the umask; the mode is the manifest's.
		if err := os.Chmod(path, f.Mode.Perm()); err != nil {
			return err
		}
		if err := chownUser(path, f.FsUser); err != nil {
			return err
		}
	}
	return nil
}

// chownUser gives path (not a symlink's target) to user, when set, as the
// kubelet's atomic writer does for a projected token of a pod whose
// containers all run as one user.
func chownUser(path string, user *int64) error {
	if user == nil {
		return nil
	}
	return os.Lchown(path, int(*user), -1)
}

// createVisible links each top-level entry of the payload into ..data.
func createVisible(dir string, payload map[string]FileProjection) error {
	for p, f := range payload {
		top, _, _ := strings.Cut(filepath.Clean(p), "/")
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := chownUser(link, f.FsUser); err != nil {
			return err
		}
	}
	return nil
}
