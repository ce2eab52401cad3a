package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// blocksOf is what the filesystem says path itself allocates.
func blocksOf(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	empty, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := blocksOf(t, dir); empty != want {
		t.Fatalf("DiskUsage of an empty dir = %d, want its own blocks %d", empty, want)
	}

	// A 1 MiB file of data counts at least 1 MiB.
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(data, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sparse file of 64 MiB apparent size with 4 KiB written counts its blocks only.
	sparse := filepath.Join(dir, "sub", "sparse")
	if err := os.MkdirAll(filepath.Dir(sparse), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 4096), 64<<20-4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Two more names for the data file: counted once.
	for _, name := range []string{"link1", "sub/link2"} {
		if err := os.Link(data, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink to a big file outside: the link counts, its target does not.
	outside := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(outside, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "outdir")); err != nil {
		t.Fatal(err)
	}

	got, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := blocksOf(t, dir) + blocksOf(t, filepath.Join(dir, "sub")) + blocksOf(t, data) + blocksOf(t, sparse) +
		blocksOf(t, filepath.Join(dir, "out")) + blocksOf(t, filepath.Join(dir, "outdir"))
	if got != want {
		t.Errorf("DiskUsage = %d, want %d (each inode once, symlinks not followed)", got, want)
	}
	if got < 1<<20 {
		t.Errorf("DiskUsage = %d, less than the 1 MiB file", got)
	}
	if got >= 3<<20 {
		t.Errorf("DiskUsage = %d: the hard links, the sparse file's hole or the symlink's target were counted", got)
	}
	if blocksOf(t, sparse) >= 1<<20 {
		t.Errorf("the sparse file allocates %d bytes; this filesystem does not make holes", blocksOf(t, sparse))
	}
}

func TestDiskUsageStaysOnItsFilesystem(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := mountTmpfs(mnt, 8<<20, 0o755); err != nil {
		t.Fatalf("mounting a tmpfs below the measured dir (needs root): %v", err)
	}
	defer func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Error(err)
		}
	}()
	before, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "x"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("DiskUsage went from %d to %d after writing into a tmpfs mounted below", before, after)
	}
}

func TestDiskUsageMissing(t *testing.T) {
	if _, err := DiskUsage(filepath.Join(t.TempDir(), "gone")); err == nil {
		t.Error("DiskUsage of a missing directory: no error")
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestDiskUsageDeepTree: a tree nested 300 levels deep, with a file at
// every level and 1 MiB at the bottom, is measured in full, holding a
// bounded number of descriptors whatever the depth.
func TestDiskUsageDeepTree(t *testing.T) {
	dir := t.TempDir()
	want := blocksOf(t, dir)
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for level := range 300 {
		if err := unix.Mkdirat(int(d.Fd()), "d", 0o755); err != nil {
			t.Fatal(err)
		}
		size := 100
		if level == 299 {
			size = 1 << 20
		}
		fd, err := unix.Openat(int(d.Fd()), "f", unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "f")
		if _, err := f.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		f.Close()
		want += st.Blocks * 512
		next, err := os.OpenFile(filepath.Join(d.Name(), "d"), os.O_RDONLY, 0)
		if err != nil {
			// The path grows too long for one call: go on from the descriptor.
			nfd, err := unix.Openat(int(d.Fd()), "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			next = os.NewFile(uintptr(nfd), d.Name()+"/d")
		}
		if err := unix.Fstat(int(next.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		want += st.Blocks * 512
		d.Close()
		d = next
	}
	d.Close()
	// A descriptor per level would run out of them.
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(openFDs(t) + maxOpenDirs + 8)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	got, err := DiskUsage(dir)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("DiskUsage of a tree 300 deep with %d descriptors: %v", low.Cur, err)
	}
	if got != want {
		t.Errorf("DiskUsage = %d, want %d", got, want)
	}
}

// TestDiskUsageUnreadable: a directory the walk cannot read is an error
// (which eviction counts as over the limit), never a part left out.
func TestDiskUsageUnreadable(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hidden := filepath.Join(dir, "a", "hidden")
	if err := os.MkdirAll(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "data"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hidden, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(hidden, 0o755)
	var err error
	withoutDACOverride(t, func() { _, err = DiskUsage(dir) })
	if err == nil || !strings.Contains(err.Error(), hidden) {
		t.Errorf("DiskUsage with an unreadable directory: %v, want an error naming %s", err, hidden)
	}
}

// withoutDACOverride runs fn on a thread whose file-system uid is nobody's
// (which drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its effective
// set, so that permissions apply to it as to anyone), when the test runs
// as root.
func withoutDACOverride(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fn()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Setfsuid(65534); err != nil {
			t.Error(err)
			return
		}
		fn()
		// Back to root's file-system uid (the capabilities come back), or
		// the thread ends with the goroutine (it stays locked).
		if unix.Setfsuid(0) == nil {
			if cur, _ := unix.SetfsuidRetUid(-1); cur == 0 {
				runtime.UnlockOSThread()
			}
		}
	}()
	<-done
}

// TestWalkNoticesMovedDirectory: a directory moved to another parent while
// the walk is below it, past the descriptors it keeps, is an error when
// the walk comes back up (it would otherwise go on in another directory).
func TestWalkNoticesMovedDirectory(t *testing.T) {
	dir := t.TempDir()
	deep := dir
	for range maxOpenDirs + 10 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	moved := false
	err := walk(dir, func(e *entry) error {
		if !moved && e.isDir() && len(e.w.stack) == maxOpenDirs+5 {
			// dir/d/d/d/d (level 4, its parent's descriptor closed by now)
			// moves under dir/other.
			moved = true
			return os.Rename(filepath.Join(dir, "d", "d", "d", "d"), filepath.Join(dir, "other", "d"))
		}
		return nil
	})
	if !moved || !errors.Is(err, errMoved) {
		t.Errorf("walk with a directory moved under it: %v (moved %v), want errMoved", err, moved)
	}
}
