package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/untrusted"
)

// load reads one path given by the user.
func (r *reader) load(path string, stdin io.Reader) {
	if path == "-" {
		data, err := ReadAll(stdin, r.opts.maxFileSize())
		if err != nil {
			r.problem(Source{File: path}, "", fmt.Sprintf("reading: %v", err))
			return
		}
		r.parse(path, data)
		return
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		r.problem(Source{File: path}, "", pathError(err))
	case info.IsDir():
		r.loadDir(path)
	default:
		r.loadFile(path)
	}
}

// IsManifest reports whether a directory entry's name is that of a
// manifest: .yaml, .yml or .json, not hidden, not an editor's temporary
// file. Load and the daemon read a directory's files by it.
func IsManifest(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasPrefix(name, "#") {
		return false
	}
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// ManifestFiles lists the manifest files of the open directory d, sorted
// by name: the regular files IsManifest names, not recursing. skipped says
// which entries of a manifest's name are something else (a symlink, a
// FIFO, a device): neither Load nor the daemon opens them.
func ManifestFiles(d *os.File) (names, skipped []string, err error) {
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		switch {
		case !IsManifest(e.Name()) || e.IsDir():
		case e.Type().IsRegular():
			names = append(names, e.Name())
		default:
			skipped = append(skipped, fmt.Sprintf("%s (%s)", e.Name(), fileKind(e.Type())))
		}
	}
	return names, skipped, nil
}

// fileKind names the type of a directory entry that is not a regular file.
func fileKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// loadDir reads a directory's manifest files in name order as the daemon
// reads its manifest directory (ManifestFiles): regular files only, each
// opened relative to the directory, never through a symlink, never
// blocking on a FIFO; what is skipped is said in a note.
func (r *reader) loadDir(dir string) {
	d, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		r.problem(Source{File: dir}, "", pathError(err))
		return
	}
	defer d.Close()
	names, skipped, err := ManifestFiles(d)
	if err != nil {
		r.problem(Source{File: dir}, "", pathError(err))
		return
	}
	for _, s := range skipped {
		r.set.Notes = append(r.set.Notes, fmt.Sprintf("%s: %s skipped: a directory's manifests are regular files", dir, s))
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		f, err := untrusted.Open(d, name)
		if err != nil {
			r.problem(Source{File: path}, "", pathError(err))
			continue
		}
		data, err := readLimited(f, r.opts.maxFileSize())
		f.Close()
		if err != nil {
			r.problem(Source{File: path}, "", pathError(err))
			continue
		}
		r.parse(path, data)
	}
	if len(names) == 0 {
		r.problem(Source{File: dir}, "", noObjects+": the directory has no .yaml, .yml or .json file")
	}
}

// loadFile reads a file the user named, refusing one over the size limit
// before reading it. It is opened without blocking: a FIFO named
// explicitly (as <(...) names a pipe) is read up to the limit, one nobody
// writes to reads as empty.
func (r *reader) loadFile(path string) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		r.problem(Source{File: path}, "", pathError(err))
		return
	}
	data, err := readLimited(f, r.opts.maxFileSize())
	f.Close()
	if err != nil {
		r.problem(Source{File: path}, "", pathError(err))
		return
	}
	r.parse(path, data)
}

// readLimited reads f to its end, refusing a regular file over limit
// from its size, before reading it.
func readLimited(f *os.File, limit int64) ([]byte, error) {
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return ReadAll(f, limit)
}

// pathError drops the operation and the path from a file system error, since
// the problem names the path already.
func pathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
