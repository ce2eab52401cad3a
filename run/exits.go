// How a container's end is kept: its exit code, time and reason on its
// labels (finish; an OOM kill read from its cgroup), its termination
// message (package termination, recorded in the pod directory: messages),
// and the last lines of its log that the errors quote (ExitError,
// readTail).

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/termination"
	"github.com/podrun/podrun/volumes"
)

// writeMessage records the termination message of attempt id of container
// name.
func (h *Host) writeMessage(l volumes.Layout, name, id, msg string) error {
	path := termination.Record(l, name, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return h.disk.WriteFile(path, []byte(msg), 0o600)
}

// messages reads the termination messages of pod's attempts that ended:
// the record when their exit was handled, else (a task that ended while no
// podrun watched) from the container's files now.
func (h *Host) messages(pod *corev1.Pod, uid string, ctrs []engine.Container) map[string]string {
	l := h.layout(uid)
	out := map[string]string{}
	for _, ctr := range ctrs {
		name := ctr.Labels[labels.Container]
		c := containerSpec(pod, name) // nil for the pause
		finished := ctr.Task.State == engine.TaskNone && ctr.Labels[labels.ExitCode] != ""
		if c == nil || (!finished && ctr.Task.State != engine.TaskStopped) {
			continue // running, or not started: no message (and no file read)
		}
		if b, ok := termination.ReadRecord(l, name, ctr.ID); ok {
			out[ctr.ID] = b
			continue
		}
		if ctr.Task.State == engine.TaskStopped {
			n, err := strconv.Atoi(ctr.Labels[labels.RestartCount])
			if err != nil {
				// The log to fall back to is that attempt's: none is read
				// rather than another's.
				out[ctr.ID] = fmt.Sprintf("Error on reading termination message: label %s: %v", labels.RestartCount, err)
				continue
			}
			out[ctr.ID] = termination.Message(l, logs.Path(h.cfg.LogDir, pod.Namespace, pod.Name, uid, name, n), c, ctr.ID, ctr.Task.ExitCode)
		}
	}
	return out
}

// ExitError is a container that exited with a non-zero code where that fails the pod.
type ExitError struct {
	Container string
	Code      uint32
	OOMKilled bool
	Tail      string
}

func (e *ExitError) Error() string {
	s := fmt.Sprintf("container %q exited with code %d", e.Container, e.Code)
	if e.OOMKilled {
		s += " (" + status.ReasonOOMKilled + ")"
	}
	if e.Tail != "" {
		s += "; last log lines:\n" + e.Tail
	}
	return s
}

// logPath is the log file of attempt restart of a container.
func (r *podRun) logPath(container string, restart int) string {
	return logs.Path(r.h.cfg.LogDir, r.pod.Namespace, r.pod.Name, r.pod.UID, container, restart)
}

// logTailLines is how many log lines an error message quotes.
const logTailLines = 10

func withLogTail(err error, logPath string) error {
	tail := readTail(logPath)
	if tail == "" {
		return err
	}
	return fmt.Errorf("%w; last log lines:\n%s", err, tail)
}

func readTail(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	lines := logs.Tail(f, logTailLines)
	for i := range lines {
		lines[i] = "  | " + lines[i]
	}
	return strings.Join(lines, "\n")
}

// finish records how attempt id of pod uid ended on its labels and deletes
// its task, so that the shim can go once nothing runs. An OOM kill nobody
// saw the event of is read from the container's cgroup first.
func (h *Host) finish(ctx context.Context, uid, id string, exit engine.Exit) error {
	l := map[string]string{
		labels.ExitCode:   strconv.Itoa(int(exit.Code)),
		labels.FinishedAt: exit.ExitedAt.UTC().Format(time.RFC3339Nano),
	}
	// The exit router has labelled an OOM kill it saw too; this is for certain.
	if exit.OOMKilled || h.oomKilled(uid, id) {
		l[labels.Reason] = status.ReasonOOMKilled
	}
	if err := h.engine.SetLabels(ctx, id, l); err != nil {
		return err
	}
	if _, err := h.engine.DeleteTask(ctx, id); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	return nil
}

// containerCgroup is the cgroup of container id of pod uid (the spec's
// cgroupsPath).
func (h *Host) containerCgroup(uid, id string) string {
	return path.Join(h.podCgroup(uid), id)
}

// oomKilled reports whether the OOM killer killed a process of container id
// of pod uid: the reason the kubelet gives when no podrun saw containerd's
// OOM event, read from its cgroup before its task is deleted.
func (h *Host) oomKilled(uid, id string) bool {
	n, err := h.cgroups.OOMKills(h.containerCgroup(uid, id))
	return err == nil && n > 0
}

// containerSpec finds a container of pod by name (nil without a pod).
func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, c := range resources.Containers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}
