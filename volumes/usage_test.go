package volumes

import (
	"os"
	"path/filepath"
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
