// Package owner answers who owns a pod on this node: the podrun daemon
// running on the state directory (the pods of its sources: its manifest
// directory and URL) or the command that asks (every other pod). It is
// the commands' one view of the daemon: it reads what the daemon
// publishes and asks it to reload, so that no command reads the daemon's
// files or signals its pid.
//
// Which process changes a pod at a given moment is a different question,
// answered by the pod's lock (run's lockPod): the daemon takes it too.
package owner

import (
	"errors"
	"fmt"

	"github.com/podrun/podrun/daemon"
	"github.com/podrun/podrun/lock"
)

// ErrNoDaemon is the error of asking a daemon when none runs on the state
// directory.
var ErrNoDaemon = errors.New("no podrun daemon runs")

// published is the seam to the daemon of a state directory: what it
// publishes there, and asking it to reload.
type published interface {
	// Status is the status the daemon published last, and whether the
	// daemon that published it runs (daemon.ReadStatusFile).
	Status() (st daemon.Status, alive bool, err error)
	// Reload asks the daemon whose status st is to read its sources again
	// (daemon.Status.Reload): lock.ErrGone when it has ended.
	Reload(st daemon.Status) error
}

// Owner tells who owns the pods of one state directory, as the daemon's
// status read when it was opened says.
type Owner struct {
	d     published
	st    daemon.Status
	alive bool
}

// Open reads who owns the pods of the state directory root: the status of
// the daemon running on it, read once, now.
func Open(root string) *Owner { return open(stateDir(root)) }

// open reads the status d publishes. A status that cannot be read (none
// was published: no daemon ever ran, or the last one exited) is no running
// daemon's; what could be read of it still names a daemon that has ended.
func open(d published) *Owner {
	st, alive, err := d.Status()
	return &Owner{d: d, st: st, alive: alive && err == nil}
}

// DaemonRuns reports whether a podrun daemon runs on the state directory.
func (o *Owner) DaemonRuns() bool { return o.alive }

// Owns reports whether the pod of source (a manifest file's path or a
// URL) is the running daemon's: false when no daemon runs.
func (o *Owner) Owns(source string) bool { return o.alive && o.st.Owns(source) }

// Ended is the pid of a daemon that would own the pod of source but has
// ended (killed -9: its status is left behind), or 0.
func (o *Owner) Ended(source string) int {
	if o.alive || o.st.PID == 0 || !o.st.Owns(source) {
		return 0
	}
	return o.st.PID
}

// Problems are the sources the running daemon could not apply (their pods
// keep running as last applied), with why; none when no daemon runs.
func (o *Owner) Problems() []daemon.Problem {
	if !o.alive {
		return nil
	}
	return o.st.Problems
}

// ProblemsOf are the Problems of source.
func (o *Owner) ProblemsOf(source string) []daemon.Problem {
	var out []daemon.Problem
	for _, p := range o.Problems() {
		if p.Source == source {
			out = append(out, p)
		}
	}
	return out
}

// Pulls are the running daemon's pulls under way, as its status file last
// showed them; none when no daemon runs.
func (o *Owner) Pulls() []daemon.Pull {
	if !o.alive {
		return nil
	}
	return o.st.Pulls
}

// Pending are the pods whose changed version the running daemon holds
// back (an update window, the pod's update lock); none when no daemon runs.
func (o *Owner) Pending() []daemon.Pending {
	if !o.alive {
		return nil
	}
	return o.st.Pending
}

// PendingOf is the update the running daemon holds back of pod key
// (namespace/name), nil when none.
func (o *Owner) PendingOf(key string) *daemon.Pending {
	for _, p := range o.Pending() {
		if p.Pod == key {
			return &p
		}
	}
	return nil
}

// Reload asks the running daemon to read its sources again now (it applies
// what changed, a rollback's version too). The error wraps ErrNoDaemon
// when none runs, or it has ended since Open.
func (o *Owner) Reload() error {
	if !o.alive {
		return ErrNoDaemon
	}
	err := o.d.Reload(o.st)
	if errors.Is(err, lock.ErrGone) {
		return fmt.Errorf("%w (pid %d has ended)", ErrNoDaemon, o.st.PID)
	}
	return err
}

// stateDir is the daemon of a state directory, as it publishes itself
// there (daemon.StatusFile, its life lock).
type stateDir string

func (root stateDir) Status() (daemon.Status, bool, error) {
	return daemon.ReadStatusFile(daemon.StatusFile(string(root)))
}

func (stateDir) Reload(st daemon.Status) error { return st.Reload() }
