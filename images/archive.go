package images

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/containerd/containerd/archive/compression"
)

// MaxSpool bounds an archive kept for its verification (uncompressed).
const MaxSpool = 16 << 30

// archive is an image archive being imported, read again, uncompressed,
// to verify the signatures it carries: a regular file as it is (a
// compressed one unpacked to a scratch file only when a verification asks
// for it), a pipe kept whole in a scratch file first (read once).
type archive struct {
	file *os.File // the archive given, when a regular file
	dir  string   // the scratch directory
	tmp  *os.File // the scratch file, if any
	sec  *io.SectionReader
}

// newArchive is r ready to be imported and read again.
func newArchive(r io.Reader, dir string) (*archive, error) {
	a := &archive{dir: dir}
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			a.file = f
			return a, nil
		}
	}
	if err := a.spool(r); err != nil {
		return nil, err
	}
	return a, nil
}

// input is what the import reads.
func (a *archive) input() io.Reader {
	if a.file != nil {
		return a.file
	}
	return io.NewSectionReader(a.sec, 0, a.sec.Size())
}

// tar is the archive uncompressed, from its start.
func (a *archive) tar() (*io.SectionReader, error) {
	if a.sec == nil {
		fi, err := a.file.Stat()
		if err != nil {
			return nil, fmt.Errorf("reading the archive again: %w", err)
		}
		whole := io.NewSectionReader(a.file, 0, fi.Size())
		head := make([]byte, 16)
		n, err := whole.ReadAt(head, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading the archive again: %w", err)
		}
		if compression.DetectCompression(head[:n]) == compression.Uncompressed {
			a.sec = whole
		} else if err := a.spool(whole); err != nil {
			return nil, err
		}
	}
	return io.NewSectionReader(a.sec, 0, a.sec.Size()), nil
}

// spool copies r, uncompressed, to an unlinked scratch file: a.sec.
func (a *archive) spool(r io.Reader) error {
	dr, err := compression.DecompressStream(r)
	if err != nil {
		return err
	}
	defer dr.Close()
	dir := a.dir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("keeping the archive to verify it: %w", err)
	}
	f, err := os.CreateTemp(dir, ".archive-*.tar")
	if err != nil {
		return fmt.Errorf("keeping the archive to verify it: %w", err)
	}
	_ = os.Remove(f.Name()) // gone with its last descriptor, whatever happens
	n, err := io.Copy(f, io.LimitReader(dr, MaxSpool+1))
	switch {
	case err != nil:
		_ = f.Close()
		return fmt.Errorf("keeping the archive to verify it: %w", err)
	case n > MaxSpool:
		_ = f.Close()
		return fmt.Errorf("the archive is more than %d bytes uncompressed: too big to verify its signatures", int64(MaxSpool))
	}
	a.tmp, a.sec = f, io.NewSectionReader(f, 0, n)
	return nil
}

// Close frees the scratch file.
func (a *archive) Close() {
	if a.tmp != nil {
		_ = a.tmp.Close()
	}
}
