package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLifeHolder: a life lock held names its holder (pid and start time);
// released, or never taken, it names none, whatever its file says.
func TestLifeHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks", "daemon.lock")
	if _, ok, err := Holder(path); ok || err != nil {
		t.Fatalf("no lock file: held %v, %v", ok, err)
	}
	l, err := HoldLife(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	self, err := started(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	p, ok, err := Holder(path)
	if !ok || err != nil || p != (Process{PID: os.Getpid(), Start: self}) {
		t.Errorf("held: %+v %v %v, want this process (start %d)", p, ok, err, self)
	}
	// Another holder waits (and is told who holds it).
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	told := 0
	if _, err := HoldLife(ctx, path, func(pid int) { told = pid }); err == nil || told != os.Getpid() {
		t.Errorf("a second holder: %v, told %d", err, told)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	// The file still names this process, which still runs: not held.
	if p, ok, err := Holder(path); ok || err != nil {
		t.Errorf("released: held by %+v (%v, %v)", p, ok, err)
	}
}

// TestSignalNeverAStranger: a process named by its pid and a start time
// that is not its own (the pid was reused) is not signalled; the process
// itself is; an ended one is ErrGone.
func TestSignalNeverAStranger(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	start, err := started(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stranger := Process{PID: cmd.Process.Pid, Start: start - 1}
	if err := stranger.Signal(unix.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("a process of another start time: %v, want ErrGone", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the stranger was signalled: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := (Process{PID: cmd.Process.Pid, Start: start}).Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("the process ended with %v, want SIGTERM", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the process was not signalled")
	}
	if err := (Process{PID: cmd.Process.Pid, Start: start}).Signal(unix.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("an ended process: %v, want ErrGone", err)
	}
	if err := (Process{}).Signal(unix.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("no process: %v, want ErrGone", err)
	}
}

func TestParseStart(t *testing.T) {
	stat := "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n"
	if got, err := parseStart([]byte(stat)); err != nil || got != 987654 {
		t.Errorf("start %d, %v; want 987654", got, err)
	}
	for _, bad := range []string{"", "4242 (x S 1", "4242 (x) S 1 2 3"} {
		if _, err := parseStart([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
