package ctrd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
)

// TestEnsureFailsWhenThePidFileCannotBeWritten: a private containerd whose
// pid file cannot be written (the only way a later podrun finds it to stop
// it) is not left running: Ensure stops it and says why.
func TestEnsureFailsWhenThePidFileCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	script := "#!/bin/sh\necho $$ > " + started + "\nexec sleep 60\n"
	if err := os.WriteFile(filepath.Join(bin, "containerd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	p := Private{Root: filepath.Join(dir, "root"), RunDir: filepath.Join(dir, "run")}
	// A directory where the pid file goes: it cannot be written.
	if err := os.MkdirAll(filepath.Join(p.RunDir, "containerd", "containerd.pid", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := p.Ensure(ctx)
	if err == nil || !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "containerd.pid") {
		t.Fatalf("Ensure = %v, want an unavailable runtime naming the pid file", err)
	}
	// Stopped before its first line ran, the fake never writes its pid:
	// nothing is left running then either.
	var b []byte
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		var rerr error
		if b, rerr = os.ReadFile(started); rerr == nil {
			break
		}
		if time.Now().After(deadline) {
			return
		}
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the containerd started (pid %d) still runs without a pid file", pid)
		}
	}
}
