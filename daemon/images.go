package daemon

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/podrun/podrun/resources"
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
	dir, err := openDir(d.o.ImagesDir) // trust.go: it and every directory above it
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []Problem{{Source: d.o.ImagesDir, Msg: "the images directory is not trusted, nothing in it is imported: " + err.Error()}}
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
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
		if err := d.importArchive(ctx, dir, e.Name()); err != nil {
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

func (d *Daemon) importArchive(ctx context.Context, dir *os.File, name string) error {
	f, err := openTrusted(dir, name)
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
	d.log.Info("imported image archive", "file", filepath.Join(d.o.ImagesDir, name), "images", strings.Join(refs, ","))
	return nil
}

// keptImages are the images of the pods the sources define, at the last
// sync: image GC keeps them though no container uses them yet. The sync
// sets them, the collector's goroutine (collectImages) reads them.
type keptImages struct {
	mu   sync.Mutex
	refs []string
}

// set keeps the images of the containers of wants (init containers too).
func (k *keptImages) set(wants map[string]Want) {
	var refs []string
	for _, w := range wants {
		for _, c := range resources.Containers(w.Pod.Pod) {
			refs = append(refs, c.Image)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refs = refs
}

// get returns a copy of the images kept.
func (k *keptImages) get() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.refs)
}
