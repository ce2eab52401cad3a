package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/podrun/podrun/lock"
)

// Status is what the daemon publishes for `podrun ps` and `podrun status`.
type Status struct {
	PID         int    `json:"pid"`
	ManifestDir string `json:"manifestDir"`
	URL         string `json:"url,omitempty"`
	// API is the source label of the pods the API server bound to the
	// node (Options.Cluster), if any.
	API      string    `json:"api,omitempty"`
	Updated  time.Time `json:"updated"`
	Problems []Problem `json:"problems,omitempty"`
	Waiting  []Waiting `json:"waiting,omitempty"`
	// RolledBack are the pods that run the version a rollback went back
	// to, until their file changes.
	RolledBack []Rollback `json:"rolledBack,omitempty"`
	// Pulls are the daemon's pulls under way (pulls.go).
	Pulls []Pull `json:"pulls,omitempty"`
	// Pending are the pods whose changed version waits for an update
	// window or for the pod's update lock (updates.go).
	Pending []Pending `json:"pending,omitempty"`
	// process is the daemon's, as its lock names it (ReadStatusFile).
	process lock.Process
}

// Owns reports whether a pod's source is one of the running daemon's
// (Sources.Owns).
func (st Status) Owns(source string) bool {
	return (&Sources{Dir: st.ManifestDir, URL: st.URL, API: st.API}).Owns(source)
}

// StatusFile is where the daemon running on the state directory root
// publishes its Status (Options.StatusFile).
func StatusFile(root string) string { return filepath.Join(root, "daemon.json") }

// LockFile is the lock a running daemon holds for its whole life (Hold),
// by the state dir whose status file is statusFile.
func LockFile(statusFile string) string {
	return filepath.Join(filepath.Dir(statusFile), "locks", "daemon.lock")
}

// holdWait is how long a daemon waits for the lock of another: one that is
// stopping, or a command reading it for an instant.
const holdWait = 2 * time.Second

// Hold takes the lock that says a daemon runs on the state dir of
// statusFile, for the life of this process: commands take the status for a
// running daemon's only while it is held (ReadStatusFile), and signal only
// its holder. It fails when
// another daemon holds it.
func Hold(ctx context.Context, statusFile string) (*lock.File, error) {
	holder := 0
	ctx, cancel := context.WithTimeout(ctx, holdWait)
	defer cancel()
	l, err := lock.HoldLife(ctx, LockFile(statusFile), func(pid int) { holder = pid })
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("another podrun daemon (pid %d) runs on %s", holder, filepath.Dir(statusFile))
	}
	return l, err
}

// ReadStatusFile reads the status file at path, and whether the daemon
// that wrote it runs: a status file left by a daemon that ended (kill -9)
// names a pid that may be another process's now, so a daemon runs only
// while its lock (Hold) is held, by the pid the file names.
func ReadStatusFile(path string) (st Status, alive bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Status{}, false, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return Status{}, false, fmt.Errorf("reading %s: %w", path, err)
	}
	p, held, err := lock.Holder(LockFile(path))
	if err != nil || !held || p.PID != st.PID {
		return st, false, err
	}
	st.process = p
	return st, true, nil
}

// Reload asks the daemon whose status st is to read its sources again now,
// as at SIGHUP (Run's hup), or returns lock.ErrGone: it has ended since.
func (st Status) Reload() error { return st.signal(syscall.SIGHUP) }

// signal sends sig to the daemon whose status st is (read by ReadStatusFile),
// or returns lock.ErrGone: it has ended since (its pid is never signalled
// then, whatever runs under it).
func (st Status) signal(sig syscall.Signal) error { return st.process.Signal(sig) }
