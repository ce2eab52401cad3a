package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/logs"
)

// stoppedAttempt is attempt id of container app as listed once its task
// stopped while no podrun watched, with restart count label n.
func stoppedAttempt(id, n string, code uint32) engine.Container {
	return engine.Container{ID: id, Labels: map[string]string{labels.Container: "app", labels.RestartCount: n},
		Task: engine.Task{State: engine.TaskStopped, ExitCode: code}}
}

// TestTerminationMessageUnwatched: the message of an attempt that stopped
// while no podrun watched is read from its file, which is never opened
// when it is not a regular file (a FIFO would block, a device would be
// opened); a restart count label that does not parse is an error in the
// message, not the log of attempt 0; a record where an older podrun kept
// it is still read.
func TestTerminationMessageUnwatched(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app",
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}))
	l, pod := hs.r.layout, hs.r.pod.Pod
	if err := os.MkdirAll(filepath.Join(l.Pod(), "containers", "app"), 0o750); err != nil {
		t.Fatal(err)
	}
	fifo, bad, old := hs.id("app", 5), hs.id("app", 6), hs.id("app", 7)
	if err := unix.Mkfifo(l.TerminationLog("app", fifo), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.TerminationLog("app", bad), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	log0 := logs.Path(hs.h.cfg.LogDir, pod.Namespace, pod.Name, testUID, "app", 0)
	if err := os.MkdirAll(filepath.Dir(log0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log0, []byte("t stdout F attempt 0's line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.TerminationLog("app", old)+".message", []byte("recorded before"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctrs := []engine.Container{stoppedAttempt(fifo, "5", 0), stoppedAttempt(bad, "six", 1), stoppedAttempt(old, "7", 1)}
	ctrs[2].Task.State, ctrs[2].Labels[labels.ExitCode] = engine.TaskNone, "1"
	done := make(chan map[string]string, 1)
	go func() { done <- hs.h.messages(pod, testUID, ctrs) }()
	var msgs map[string]string
	select {
	case msgs = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the termination messages blocks on a FIFO")
	}
	if m := msgs[fifo]; !strings.Contains(m, "not a regular file") || !strings.Contains(m, "FIFO") {
		t.Errorf("the message of an attempt whose file is a FIFO: %q, want an error saying so", m)
	}
	if m := msgs[bad]; !strings.Contains(m, labels.RestartCount) || strings.Contains(m, "attempt 0") {
		t.Errorf("the message of an attempt with a bad restart count label: %q, want an error naming the label", m)
	}
	if m := msgs[old]; m != "recorded before" {
		t.Errorf("a record where an older podrun kept it: %q", m)
	}
}
