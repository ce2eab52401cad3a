package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
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
	if err := SweepRemoved(root, "pod.json"); err != nil {
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
	if err := SweepRemoved(t.TempDir(), "pod.json"); err != nil {
		t.Error(err)
	}
}

// TestTerminationLogsBounded: the containers' termination-message files
// are on a tmpfs of TerminationLogsSize: a container writing without end
// fills that, never the state filesystem.
func TestTerminationLogsBounded(t *testing.T) {
	l := testLayout(t)
	if err := l.Make("pod.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
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

// TestMakeRecordsFirst: Make's pod directory appears with its record in it
// (made aside, renamed in place); an existing one gets its record replaced;
// Create mounts the tmpfs only in a directory Make made.
func TestMakeRecordsFirst(t *testing.T) {
	l := Layout{Root: t.TempDir(), UID: "u"}
	t.Cleanup(func() { _ = unmountAll(l.Root) })
	if err := l.Create(); err == nil {
		t.Fatal("Create made a pod directory without a record")
	}
	if _, err := os.Lstat(l.Pod()); !os.IsNotExist(err) {
		t.Fatalf("Create without Make left %s: %v", l.Pod(), err)
	}
	// What a Make killed before its rename left.
	if err := os.MkdirAll(creating(l), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := l.Make("pod.json", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(l.File("pod.json")); err != nil || string(b) != "1" {
		t.Fatalf("record %q, %v", b, err)
	}
	if err := l.Make("pod.json", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(l.File("pod.json")); err != nil || string(b) != "2" {
		t.Fatalf("record replaced: %q, %v", b, err)
	}
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(l.Root, "pods"))
	if len(entries) != 1 || entries[0].Name() != "u" {
		t.Errorf("pods directory holds %v, want the pod's alone", entries)
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestSweepPodDirectoryWithoutRecord: what a podrun killed while making a
// pod directory left — before Make: the directory with its two tmpfs
// mounts and no record; with Make: the directory made aside — is swept
// (the one made aside once its lock is free); pods with a record are not.
func TestSweepPodDirectoryWithoutRecord(t *testing.T) {
	root := t.TempDir()
	t.Cleanup(func() { _ = unmountAll(root) })
	orphan, kept, aside := Layout{Root: root, UID: "orphan"}, Layout{Root: root, UID: "kept"}, Layout{Root: root, UID: "aside"}
	if err := os.MkdirAll(orphan.Pod(), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := orphan.Create(); err != nil {
		t.Fatal(err)
	}
	if err := kept.Make("pod.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := kept.Create(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(creating(aside), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := SweepRemoved(root, "pod.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(orphan.Pod()); !os.IsNotExist(err) {
		t.Errorf("the pod directory without a record after the sweep: %v, want it gone", err)
	}
	if m := mountsUnder(t, orphan.Pod()); len(m) != 0 {
		t.Errorf("mounts left: %v", m)
	}
	if _, err := os.Stat(kept.File("pod.json")); err != nil {
		t.Errorf("a pod with a record was swept: %v", err)
	}
	if _, err := os.Lstat(creating(aside)); !os.IsNotExist(err) {
		t.Errorf("a pod directory made aside by a podrun that is gone after the sweep: %v, want it gone", err)
	}
	// One being made now (its podrun holds its lock) is left alone.
	if err := os.MkdirAll(creating(aside), 0o750); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(creating(aside))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := SweepRemoved(root, "pod.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(creating(aside)); err != nil {
		t.Errorf("a pod directory being made right now was swept: %v", err)
	}
	d.Close()
	if err := SweepRemoved(root, "pod.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(creating(aside)); !os.IsNotExist(err) {
		t.Errorf("a pod directory made aside, its lock free, after the sweep: %v, want it gone", err)
	}
	if err := kept.Remove(); err != nil {
		t.Fatal(err)
	}
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	return out
}
