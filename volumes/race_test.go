package volumes

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// hostile builds a volume whose entries a racing goroutine keeps swapping
// with symlinks to a file and a directory outside it (renameat2
// RENAME_EXCHANGE, as a container can), and returns the outside file and
// directory and a stop function.
func hostile(t *testing.T) (vol, outFile, outDir string, stop func()) {
	t.Helper()
	vol, outside := t.TempDir(), t.TempDir()
	outFile, outDir = filepath.Join(outside, "passwd"), filepath.Join(outside, "etc")
	if err := os.WriteFile(outFile, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Big enough that the walk counts it if it ever gets there.
	if err := os.WriteFile(filepath.Join(outDir, "big"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ real, link, target string }{{"file", "file-link", outFile}, {"dir", "dir-link", outDir}} {
		if c.real == "file" {
			if err := os.WriteFile(filepath.Join(vol, c.real), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Mkdir(filepath.Join(vol, c.real), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(c.target, filepath.Join(vol, c.link)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, pair := range [][2]string{{"file", "file-link"}, {"dir", "dir-link"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, b := filepath.Join(vol, pair[0]), filepath.Join(vol, pair[1])
			for {
				select {
				case <-done:
					return
				default:
				}
				_ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
			}
		}()
	}
	return vol, outFile, outDir, func() { close(done); wg.Wait() }
}

// TestSetOwnershipRaceNeverLeavesVolume: a container swapping entries for
// symlinks to host files while podrun gives the volume to fsGroup never
// gets a host file or directory re-owned or chmod'ed.
func TestSetOwnershipRaceNeverLeavesVolume(t *testing.T) {
	gid := int(fsGroupForTest())
	vol, outFile, outDir, stop := hostile(t)
	fileGid, fileMode := ownership(t, outFile)
	dirGid, dirMode := ownership(t, outDir)
	for i := 0; i < 2000; i++ {
		_ = setOwnership(vol, gid, fsGroupRW) // an entry vanishing mid-walk may fail it: only escapes matter
	}
	stop()
	if g, m := ownership(t, outFile); g != fileGid || m != fileMode {
		t.Errorf("host file re-owned through a swapped symlink: group %d mode %v, was %d %v", g, m, fileGid, fileMode)
	}
	if g, m := ownership(t, outDir); g != dirGid || m != dirMode {
		t.Errorf("host directory re-owned through a swapped symlink: group %d mode %v, was %d %v", g, m, dirGid, dirMode)
	}
}

// TestDiskUsageRaceNeverLeavesVolume: the eviction walk never counts (so
// never reads) what lies behind a symlink swapped in for a directory.
func TestDiskUsageRaceNeverLeavesVolume(t *testing.T) {
	vol, _, _, stop := hostile(t)
	defer stop()
	for i := 0; i < 2000; i++ {
		n, err := DiskUsage(vol)
		if err == nil && n >= 4<<20 {
			t.Fatalf("DiskUsage = %d on iteration %d: it walked into the 4 MiB file outside the volume", n, i)
		}
	}
}

// TestSubPathRaceNeverMountsOutside: a sibling container swapping the
// subPath directory for a symlink to a host directory while podrun
// prepares the mount (CVE-2017-1002101, CVE-2021-25741) never gets the host
// directory mounted: what the container gets (emulating runc, which
// resolves the source when it mounts) is always the volume's own
// directory, or an error.
func TestSubPathRaceNeverMountsOutside(t *testing.T) {
	vol, _, outDir, stop := hostile(t)
	defer stop()
	p := &Prepared{layout: testLayout(t), Paths: map[string]string{"v": vol}}
	c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPath: "dir"}}}
	mounted := 0
	for i := 0; i < 1000; i++ {
		ms, err := p.Mounts(c, nil)
		if err != nil {
			continue
		}
		mounted++
		// runc resolves the source some time later: look at it over a while.
		for range 50 {
			if sameFile(ms[0].Source, outDir) {
				t.Fatalf("iteration %d: the host directory %s is what the container would get", i, outDir)
			}
		}
	}
	if mounted == 0 {
		t.Fatal("no iteration mounted anything: the race test proves nothing")
	}
	t.Logf("%d of 1000 mounts made, none outside the volume", mounted)
}
