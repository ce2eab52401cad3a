package logs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Retention bounds the logs of pods that are gone (the logs of pods that
// exist are bounded by Rotation).
type Retention struct {
	MaxAge   time.Duration // a gone pod's logs are kept this long after their last write; 0: no limit
	MaxTotal int64         // bytes of all the log dir; over it, gone pods' logs go, oldest first; 0: no limit
}

// DefaultRetention: a week, and 1 GiB for the whole log dir.
var DefaultRetention = Retention{MaxAge: 7 * 24 * time.Hour, MaxTotal: 1 << 30}

// marker is the file the log driver puts in each pod's log directory: GC
// only ever removes directories podrun made (a node's /var/log/pods may
// be a kubelet's too).
const marker = ".podrun"

// markPodDir marks the pod's log directory (the parent of a container's).
func markPodDir(containerDir string) error {
	f, err := os.OpenFile(filepath.Join(filepath.Dir(containerDir), marker), os.O_CREATE|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// podLogs is one pod log directory as GC sees it.
type podLogs struct {
	path  string
	size  int64
	last  time.Time // newest write below it
	alive bool
}

// GC removes the log directories under dir of pods that are gone (alive
// says which directory names belong to pods that exist): those not written
// for r.MaxAge, then, while the log dir holds more than r.MaxTotal, the
// oldest. It never touches a pod that exists, nor a directory podrun did
// not make. It returns the directories it removed.
func GC(dir string, alive func(name string) bool, r Retention, now time.Time) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pods []podLogs
	var total int64
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(p, marker)); err != nil {
			continue // not podrun's
		}
		pl := podLogs{path: p, alive: alive(e.Name())}
		_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() == marker {
				return nil
			}
			if info, err := d.Info(); err == nil {
				pl.size += info.Size()
				if info.ModTime().After(pl.last) {
					pl.last = info.ModTime()
				}
			}
			return nil
		})
		total += pl.size
		pods = append(pods, pl)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].last.Before(pods[j].last) })
	var removed []string
	var errs []error
	for _, pl := range pods {
		if pl.alive {
			continue
		}
		old := r.MaxAge > 0 && now.Sub(pl.last) > r.MaxAge
		over := r.MaxTotal > 0 && total > r.MaxTotal
		if !old && !over {
			continue
		}
		if err := os.RemoveAll(pl.path); err != nil {
			errs = append(errs, err)
			continue
		}
		total -= pl.size
		removed = append(removed, pl.path)
	}
	return removed, errors.Join(errs...)
}
