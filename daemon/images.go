package daemon

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// archiveExts are the image archives read from the images directory: OCI
// or docker archives, plain or compressed (engine.Engine.Import).
var archiveExts = []string{".tar", ".tar.gz", ".tgz", ".tar.zst"}

func isArchive(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	for _, ext := range archiveExts {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// archiveSeen is what an archive was when it was last imported (or failed).
type archiveSeen struct {
	size int64
	mod  time.Time
}

// importImages imports the archives of the images directory that are new
// or changed since they were last seen, as k3s's air-gap images directory:
// at start, before the first pods are started, and at each sync after.
// An archive being written (changed in the last Settle) waits for the
// next sync. Like a manifest, an archive must be root's and not writable by
// others: it is code the node runs.
func (d *Daemon) importImages(ctx context.Context) []Problem {
	if d.o.ImagesDir == "" {
		return nil
	}
	entries, err := os.ReadDir(d.o.ImagesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []Problem{{Source: d.o.ImagesDir, Msg: err.Error()}}
	}
	var problems []Problem
	for _, e := range entries {
		if !e.Type().IsRegular() || !isArchive(e.Name()) {
			continue
		}
		path := filepath.Join(d.o.ImagesDir, e.Name())
		info, err := e.Info()
		if err != nil {
			continue
		}
		seen := archiveSeen{info.Size(), info.ModTime()}
		if prev, ok := d.archives[path]; ok && prev.seen == seen {
			if prev.err != "" {
				problems = append(problems, Problem{Source: path, Msg: prev.err})
			}
			continue
		}
		if time.Since(seen.mod) < d.o.Settle {
			continue // still being written
		}
		msg := ""
		if err := d.importArchive(ctx, path); err != nil {
			if ctx.Err() != nil {
				return problems
			}
			msg = "importing the image archive: " + err.Error()
			problems = append(problems, Problem{Source: path, Msg: msg})
		}
		d.archives[path] = archiveState{seen: seen, err: msg}
	}
	return problems
}

// archiveState is an archive as last seen, and why it failed ("" if not).
type archiveState struct {
	seen archiveSeen
	err  string
}

func (d *Daemon) importArchive(ctx context.Context, path string) error {
	f, err := openTrusted(path)
	if err != nil {
		return err
	}
	defer f.Close()
	imgs, err := d.h.Images().Import(ctx, f)
	if err != nil {
		return err
	}
	var refs []string
	for _, i := range imgs {
		refs = append(refs, i.Ref)
	}
	d.log.Info("imported image archive", "file", path, "images", strings.Join(refs, ","))
	return nil
}

// openTrusted opens a file the daemon is to act on, as sshd's StrictModes
// would: never through a symlink, never blocking on a FIFO or device
// swapped in (O_NONBLOCK, then fstat of that descriptor: only a regular
// file), only when root or the daemon's user owns it and nobody else can
// write it (trusted).
func openTrusted(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, errors.New("is a symlink: not read")
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = errors.New("is not a regular file (" + st.Mode().Type().String() + "): not read")
	}
	if err == nil {
		err = trusted(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
