package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// pluginWait bounds the wait for the plugins of an ADD cut off, and
// pluginPoll is how often it looks.
const (
	pluginWait = 30 * time.Second
	pluginPoll = 20 * time.Millisecond
)

// plugins finds the CNI plugins still running for an ADD that a killed
// podrun cut off: a plugin goes on after its podrun dies, and what it makes
// after DEL would stay. Only what podrun itself could have started counts:
// a process of root (real and effective uid 0) whose executable is one of
// the files in the CNI bin dirs — the same inode, looked up through
// /proc/PID/exe (which no container can name: a file of a container's own
// at /opt/cni/bin is another inode) — with CNI_COMMAND=ADD and the pod's
// CNI_CONTAINERID in its environment. Anyone else with that environment
// (the container id is in the names of the log directories) delays nothing.
// A program a plugin runs (iptables for portmap) is not counted: its plugin
// waits for it, and runs as long.
//
// libcni runs the plugins through an invoke.Exec that podrun could supply
// and record their pids, but a pid is known only after the fork: a podrun
// killed between the fork and the record leaves exactly the plugin this
// wait is for unrecorded, and the IPAM plugin a plugin runs is never seen.
type plugins struct {
	proc    string      // where /proc is (a fake one in tests)
	binDirs []string    // the CNI bin dirs plugins are run from
	clock   clock.Clock // bounds the wait; nil is the real one
}

// wait waits while a plugin runs for containerID's ADD, at most pluginWait;
// an error reading /proc is an error (DEL would otherwise go on under a
// plugin that still makes its rules).
func (p plugins) wait(ctx context.Context, containerID string) error {
	bins, err := p.executables()
	if err != nil {
		return err
	}
	if len(bins) == 0 {
		return nil // nothing podrun could have run
	}
	id := []byte("\x00CNI_CONTAINERID=" + containerID + "\x00")
	clk := p.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	deadline := clk.Now().Add(pluginWait)
	for {
		running, err := p.adding(bins, id)
		if err != nil || !running || !clk.Now().Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(pluginPoll):
		}
	}
}

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// executables are the identities of the files in the bin dirs (a symlink's
// target's, as exec runs it), resolved once per wait. A bin dir that does
// not exist has none.
func (p plugins) executables() (map[fileID]bool, error) {
	bins := map[fileID]bool{}
	for _, dir := range p.binDirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing the CNI bin dir: %w", err)
		}
		for _, e := range entries {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(dir, e.Name()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue // dangling, or no program
			}
			bins[fileID{uint64(st.Dev), st.Ino}] = true
		}
	}
	return bins, nil
}

// adding reports whether a plugin (a process of root running one of bins)
// has CNI_COMMAND=ADD and id (a CNI_CONTAINERID entry between NULs) in its
// environment. A process that is gone, or that cannot be looked at, is not
// one.
func (p plugins) adding(bins map[fileID]bool, id []byte) (bool, error) {
	procs, err := os.ReadDir(p.proc)
	if err != nil {
		return false, fmt.Errorf("listing the processes that may be CNI plugins: %w", err)
	}
	for _, e := range procs {
		pid := e.Name()
		if pid[0] < '1' || pid[0] > '9' {
			continue
		}
		dir := filepath.Join(p.proc, pid)
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(dir, "exe"), &st); err != nil || !bins[fileID{uint64(st.Dev), st.Ino}] {
			continue // gone, a kernel thread, or no plugin
		}
		if !rootProcess(filepath.Join(dir, "status")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			continue
		}
		env = append(append([]byte{0}, env...), 0)
		if bytes.Contains(env, id) && bytes.Contains(env, []byte("\x00CNI_COMMAND=ADD\x00")) {
			return true, nil
		}
	}
	return false, nil
}

// rootProcess reports whether the process whose /proc/PID/status is at
// path runs with real and effective uid 0.
func rootProcess(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "Uid:")
		if !ok {
			continue
		}
		ids := strings.Fields(rest)
		if len(ids) < 2 {
			return false
		}
		real, err1 := strconv.Atoi(ids[0])
		eff, err2 := strconv.Atoi(ids[1])
		return err1 == nil && err2 == nil && real == 0 && eff == 0
	}
	return false
}
