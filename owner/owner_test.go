package owner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/podrun/podrun/daemon"
	"github.com/podrun/podrun/lock"
)

// fakeDaemon publishes a fixed status and records the reloads asked of it.
type fakeDaemon struct {
	st        daemon.Status
	alive     bool
	err       error // of Status
	reloadErr error
	reloads   []int // the pids asked
}

func (f *fakeDaemon) Status() (daemon.Status, bool, error) { return f.st, f.alive, f.err }

func (f *fakeDaemon) Reload(st daemon.Status) error {
	f.reloads = append(f.reloads, st.PID)
	return f.reloadErr
}

var (
	problems = []daemon.Problem{{Source: "/m/a.yaml", Msg: "bad"}, {Source: "/m/b.yaml", Msg: "worse"}, {Source: "/m/a.yaml", Msg: "and"}}
	status   = daemon.Status{PID: 42, ManifestDir: "/m", URL: "https://h/pods", Problems: problems}
)

// TestOwner: what the owner answers from the daemon's status and whether
// the daemon runs.
func TestOwner(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        fakeDaemon
		source   string
		runs     bool
		owns     bool
		ended    int
		problems int // of every source
		of       []string
	}{
		{name: "no status", d: fakeDaemon{err: os.ErrNotExist}, source: "/m/a.yaml"},
		{name: "running, its directory's file", d: fakeDaemon{st: status, alive: true}, source: "/m/a.yaml",
			runs: true, owns: true, problems: 3, of: []string{"bad", "and"}},
		{name: "running, its URL", d: fakeDaemon{st: status, alive: true}, source: "https://h/pods", runs: true, owns: true, problems: 3},
		{name: "running, another directory's file", d: fakeDaemon{st: status, alive: true}, source: "/elsewhere/a.yaml", runs: true, problems: 3},
		{name: "running, a file in a subdirectory", d: fakeDaemon{st: status, alive: true}, source: "/m/sub/a.yaml", runs: true, problems: 3},
		{name: "running, no source (stdin)", d: fakeDaemon{st: status, alive: true}, source: "", runs: true, problems: 3},
		{name: "ended: its file is left", d: fakeDaemon{st: status}, source: "/m/b.yaml", ended: 42},
		{name: "ended, another's file", d: fakeDaemon{st: status}, source: "/elsewhere/b.yaml"},
		{name: "ended, its lock unreadable", d: fakeDaemon{st: status, err: errors.New("reading the lock")}, source: "/m/b.yaml", ended: 42},
		{name: "a status naming no pid", d: fakeDaemon{st: daemon.Status{ManifestDir: "/m"}}, source: "/m/b.yaml"},
		{name: "alive, yet an error", d: fakeDaemon{st: status, alive: true, err: errors.New("odd")}, source: "/m/a.yaml", ended: 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := open(&tc.d)
			if got := o.DaemonRuns(); got != tc.runs {
				t.Errorf("DaemonRuns: %v, want %v", got, tc.runs)
			}
			if got := o.Owns(tc.source); got != tc.owns {
				t.Errorf("Owns(%q): %v, want %v", tc.source, got, tc.owns)
			}
			if got := o.Ended(tc.source); got != tc.ended {
				t.Errorf("Ended(%q): %d, want %d", tc.source, got, tc.ended)
			}
			if got := len(o.Problems()); got != tc.problems {
				t.Errorf("Problems: %d, want %d", got, tc.problems)
			}
			var msgs []string
			for _, p := range o.ProblemsOf(tc.source) {
				msgs = append(msgs, p.Msg)
			}
			if !slices.Equal(msgs, tc.of) {
				t.Errorf("ProblemsOf(%q): %q, want %q", tc.source, msgs, tc.of)
			}
		})
	}
}

// TestReload: only a running daemon is asked, the one whose status was
// read; one that has ended since is ErrNoDaemon, with its pid.
func TestReload(t *testing.T) {
	denied := errors.New("signalling pid 42: operation not permitted")
	for _, tc := range []struct {
		name    string
		d       fakeDaemon
		asked   []int
		noneErr bool   // wraps ErrNoDaemon
		err     string // "" : nil
	}{
		{name: "running", d: fakeDaemon{st: status, alive: true}, asked: []int{42}},
		{name: "none runs", d: fakeDaemon{err: os.ErrNotExist}, noneErr: true, err: "no podrun daemon runs"},
		{name: "ended before", d: fakeDaemon{st: status}, noneErr: true, err: "no podrun daemon runs"},
		{name: "ended since", d: fakeDaemon{st: status, alive: true, reloadErr: lock.ErrGone}, asked: []int{42},
			noneErr: true, err: "no podrun daemon runs (pid 42 has ended)"},
		{name: "refused", d: fakeDaemon{st: status, alive: true, reloadErr: denied}, asked: []int{42}, err: denied.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := open(&tc.d).Reload()
			if !slices.Equal(tc.d.reloads, tc.asked) {
				t.Errorf("asked pids %v, want %v", tc.d.reloads, tc.asked)
			}
			if errors.Is(err, ErrNoDaemon) != tc.noneErr {
				t.Errorf("error %v: ErrNoDaemon %v, want %v", err, !tc.noneErr, tc.noneErr)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// TestOpenStateDir: Open reads the status a daemon of the state directory
// publishes, while the daemon's lock is held by the pid it names, and
// Reload reaches that process with SIGHUP (this test's process plays the
// daemon); a left status is no running daemon's.
func TestOpenStateDir(t *testing.T) {
	root := t.TempDir()
	if o := Open(root); o.DaemonRuns() || o.Owns("/m/a.yaml") {
		t.Fatal("a daemon runs on an empty state directory")
	}
	st := daemon.Status{PID: os.Getpid(), ManifestDir: "/m", Problems: problems}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "daemon.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if o := Open(root); o.DaemonRuns() || o.Ended("/m/a.yaml") != os.Getpid() {
		t.Errorf("a status whose daemon holds no lock: runs %v, ended %d, want not running, ended %d", o.DaemonRuns(), o.Ended("/m/a.yaml"), os.Getpid())
	}

	l, err := daemon.Hold(context.Background(), daemon.StatusFile(root))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	o := Open(root)
	if !o.DaemonRuns() || !o.Owns("/m/a.yaml") || len(o.ProblemsOf("/m/a.yaml")) != 2 {
		t.Fatalf("the running daemon's status: runs %v, owns %v, problems %v", o.DaemonRuns(), o.Owns("/m/a.yaml"), o.ProblemsOf("/m/a.yaml"))
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := o.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	select {
	case <-hup:
	case <-time.After(5 * time.Second):
		t.Fatal("Reload sent no SIGHUP to the daemon")
	}
}
