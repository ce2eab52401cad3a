package ctrd

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A task's work directory left from before containerd started (a reboot
// emptied /run: containerd keeps no state of the task and so never removes
// its work directory) is no create in flight; one changed since containerd
// made its socket may be. Unknown is "maybe": waited out, as before.
func TestBeforeServer(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	started := time.Now()
	if err := os.Chtimes(sock, started, started); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o711); err != nil {
		t.Fatal(err)
	}
	stat := func(at time.Time) os.FileInfo {
		t.Helper()
		if err := os.Chtimes(work, at, at); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(work)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	for _, c := range []struct {
		name    string
		address string
		fi      os.FileInfo
		want    bool
	}{
		{"left before the start", sock, stat(started.Add(-time.Hour)), true},
		{"left before the start, unix:// address", "unix://" + sock, stat(started.Add(-time.Millisecond)), true},
		{"made since the start", sock, stat(started.Add(time.Millisecond)), false},
		{"no work directory", sock, nil, false},
		{"no socket to look at", filepath.Join(dir, "gone.sock"), stat(started.Add(-time.Hour)), false},
	} {
		e := &Engine{address: c.address}
		if got := e.beforeServer(c.fi); got != c.want {
			t.Errorf("%s: beforeServer = %v, want %v", c.name, got, c.want)
		}
	}
}
