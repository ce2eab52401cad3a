package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podrun/podrun/lock"
)

// TestReadStatusOnlyFromALiveDaemon: the status file is a running
// daemon's only while the daemon's lock is held by the pid it names. A
// file left by a daemon killed -9 names a pid that a stranger may have
// now: that stranger (alive, root's) is no daemon, and is never
// signalled.
func TestReadStatusOnlyFromALiveDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "daemon.json")
	write := func(pid int) {
		data, _ := json.Marshal(Status{PID: pid, ManifestDir: "/m", Problems: []Problem{{Source: "/m/a.yaml", Msg: "bad"}}})
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := readRunning(path); ok {
		t.Error("a missing status file was read")
	}
	// A stranger has the pid the file names; no daemon holds the lock.
	stranger := exec.Command("sleep", "60")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stranger.Wait() }()
	defer stranger.Process.Kill()
	write(stranger.Process.Pid)
	if st, ok := readRunning(path); ok {
		t.Errorf("the status of pid %d, which holds no daemon lock, was read: %+v", st.PID, st)
	}
	if st, alive, err := ReadStatusFile(path); alive || err != nil || st.PID != stranger.Process.Pid {
		t.Errorf("ReadStatusFile: %+v alive %v %v, want the file's content, not alive", st, alive, err)
	}
	if err := (Status{PID: stranger.Process.Pid}).Reload(); !errors.Is(err, lock.ErrGone) {
		t.Errorf("asking a status not read from a live daemon to reload: %v, want ErrGone", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the stranger was signalled: %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	// This process holds the lock: its status is read, the other pid's not.
	l, err := Hold(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := readRunning(path); ok {
		t.Error("a status naming another pid than the lock's holder was read")
	}
	write(os.Getpid())
	st, ok := readRunning(path)
	if !ok || len(st.Problems) != 1 || st.ManifestDir != "/m" {
		t.Fatalf("live daemon's status: %+v, %v", st, ok)
	}
	if _, err := Hold(context.Background(), path); err == nil {
		t.Error("a second daemon took the lock")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := st.signal(syscall.Signal(0)); err != nil {
		t.Errorf("signal 0 to this process: %v", err)
	}
	if _, ok := readRunning(path); ok {
		t.Error("a status whose daemon released its lock was read")
	}
}

// readRunning is the status at path when the daemon that wrote it runs.
func readRunning(path string) (Status, bool) {
	st, alive, err := ReadStatusFile(path)
	return st, err == nil && alive
}
