package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// podWithData makes pod directory l with its record and an emptyDir of
// many files, and a hostPath bind whose host directory must survive.
func podWithData(t *testing.T, l Layout) (hostFile string) {
	t.Helper()
	data := l.EmptyDir("data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(data, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.File("pod.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	host := t.TempDir()
	hostFile = filepath.Join(host, "keep")
	if err := os.WriteFile(hostFile, []byte("host's"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := l.HostPath("h")
	if err := os.MkdirAll(target, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(host, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unmountAll(l.Root) })
	return hostFile
}

// TestRemoveNeverLeavesDataWithoutRecord: Remove renames the pod directory
// to .removing-<uid> (atomically: the record and the data go together)
// before deleting it; what a kill -9 leaves of that, SweepRemoved deletes
// (unmounting first: a hostPath's files are never touched). A pod
// directory is never swept.
func TestRemoveNeverLeavesDataWithoutRecord(t *testing.T) {
	root := t.TempDir()
	gone, kept := Layout{Root: root, UID: "gone"}, Layout{Root: root, UID: "kept"}
	host := podWithData(t, gone)
	podWithData(t, kept)
	if err := unmountAll(gone.Pod()); err != nil {
		t.Fatal(err)
	}
	// What a Remove killed after its rename leaves: the rename, the
	// deletion half done, a mount (made again to check none is crossed).
	if err := os.Rename(gone.Pod(), removing(gone)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(removing(gone), "pod.json")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Dir(host), filepath.Join(removing(gone), "volumes", "kubernetes.io~host-path", "h"), "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := SweepRemoved(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(removing(gone)); !os.IsNotExist(err) {
		t.Errorf("%s after the sweep: %v, want it gone", removing(gone), err)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("the hostPath's file: %v (the sweep deleted through the mount)", err)
	}
	if _, err := os.Stat(kept.File("pod.json")); err != nil {
		t.Errorf("another pod's record: %v", err)
	}

	// Remove of a pod whose earlier removal was cut off after the rename
	// and that was made again with the same uid (the content's hash).
	podWithData(t, gone)
	if err := os.MkdirAll(filepath.Join(removing(gone), "volumes"), 0o750); err != nil {
		t.Fatal(err)
	}
	for _, l := range []Layout{gone, kept} {
		if err := l.Remove(); err != nil {
			t.Fatal(err)
		}
		if err := l.Remove(); err != nil {
			t.Fatalf("a second Remove: %v", err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "pods"))
	if err != nil || len(entries) != 0 {
		t.Errorf("pods directory after Remove: %v %v, want empty", entries, err)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("the hostPath's file: %v (Remove deleted through the mount)", err)
	}
}

// TestSweepRemovedWithoutPods: no pods directory yet is nothing to sweep.
func TestSweepRemovedWithoutPods(t *testing.T) {
	if err := SweepRemoved(t.TempDir()); err != nil {
		t.Error(err)
	}
}

// TestTerminationLogsBounded: the containers' termination-message files
// are on a tmpfs of TerminationLogsSize: a container writing without end
// fills that, never the state filesystem.
func TestTerminationLogsBounded(t *testing.T) {
	l := testLayout(t)
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	path := l.TerminationLog("app", "id-0")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Write(make([]byte, 2*TerminationLogsSize))
	if !errors.Is(err, unix.ENOSPC) || n > TerminationLogsSize {
		t.Errorf("writing twice the bound: %d bytes written, %v; want ENOSPC within %d", n, err, TerminationLogsSize)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Errorf("statfs: type %x, %v; want a tmpfs", fs.Type, err)
	}
}
