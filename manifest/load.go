package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// manifestExts are the extensions of the files read from a directory.
var manifestExts = []string{".yaml", ".yml", ".json"}

// loadDir reads a directory's manifest files in name order, as the kubelet
// reads a static pod directory: no recursion, dotfiles ignored.
func (r *reader) loadDir(dir string) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		r.problem(Source{File: dir}, "", pathError(err))
		return
	}
	found := false
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || e.IsDir() || !hasManifestExt(name) {
			continue
		}
		found = true
		r.loadFile(filepath.Join(dir, name))
	}
	if !found {
		r.problem(Source{File: dir}, "", noObjects+": the directory has no .yaml, .yml or .json file")
	}
}

func hasManifestExt(name string) bool {
	for _, ext := range manifestExts {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// loadFile reads a file the user named, refusing one over the size limit
// before reading it (a pipe, as from <(...), is read up to the limit).
func (r *reader) loadFile(path string) {
	data, err := readFile(path, r.opts.maxFileSize())
	if err != nil {
		r.problem(Source{File: path}, "", pathError(err))
		return
	}
	r.parse(path, data)
}

func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
