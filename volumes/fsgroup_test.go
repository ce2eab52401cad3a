package volumes

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fsGroupForTest is a group the test may give files to: any group as root,
// else the test's own.
func fsGroupForTest() int64 {
	if os.Geteuid() == 0 {
		return 4242
	}
	return int64(os.Getgid())
}

func fsGroupPod(gid int64, policy *corev1.PodFSGroupChangePolicy, vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{FSGroup: &gid, FSGroupChangePolicy: policy},
		Volumes:         vols,
	}}
}

// ownership returns a path's group and mode (permission, setuid/setgid/sticky bits).
func ownership(t *testing.T, path string) (int, os.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.Sys().(*syscall.Stat_t).Gid), info.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSetuid | os.ModeSticky)
}

func TestFSGroupEmptyDir(t *testing.T) {
	gid := fsGroupForTest()
	hostDir := t.TempDir()
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostGid, hostMode := ownership(t, hostDir)
	l := testLayout(t)
	pod := fsGroupPod(gid, nil,
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}})
	p, err := Setup(l, pod, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, m := ownership(t, p.Paths["scratch"]); g != int(gid) || m != 0o777|os.ModeSetgid {
		t.Errorf("emptyDir: group %d mode %v, want %d and setgid rwxrwxrwx", g, m, gid)
	}
	if g, m := ownership(t, hostDir); g != hostGid || m != hostMode {
		t.Errorf("hostPath: group %d mode %v, want it untouched (%d %v)", g, m, hostGid, hostMode)
	}
}

func TestSetOwnership(t *testing.T) {
	gid := fsGroupForTest()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	for _, step := range []error{
		os.Chmod(dir, 0o755),
		os.Mkdir(filepath.Join(dir, "sub"), 0o700),
		os.WriteFile(filepath.Join(dir, "sub", "file"), nil, 0o600),
		os.WriteFile(outside, nil, 0o600),
		os.Symlink(outside, filepath.Join(dir, "link")),
		os.Chmod(filepath.Join(dir, "sub"), 0o700),
		os.Chmod(filepath.Join(dir, "sub", "file"), 0o600),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if err := SetOwnership(dir, fsGroupPod(gid, nil), false); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		dir:                               0o775 | os.ModeSetgid,
		filepath.Join(dir, "sub"):         0o770 | os.ModeSetgid,
		filepath.Join(dir, "sub", "file"): 0o660,
	} {
		if g, m := ownership(t, path); g != int(gid) || m != want {
			t.Errorf("%s: group %d mode %v, want %d %v", path, g, m, gid, want)
		}
	}
	if _, m := ownership(t, outside); m != 0o600 {
		t.Errorf("the symlink's target was chmod'ed: %v", m)
	}

	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "key"), nil, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := SetOwnership(ro, fsGroupPod(gid, nil), true); err != nil {
		t.Fatal(err)
	}
	if g, m := ownership(t, filepath.Join(ro, "key")); g != int(gid) || m != 0o440 {
		t.Errorf("read-only volume file: group %d mode %v, want %d 0440", g, m, gid)
	}
}

func TestSetOwnershipOnRootMismatch(t *testing.T) {
	gid := fsGroupForTest()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o770|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, -1, int(gid)); err != nil {
		t.Fatal(err)
	}
	policy := corev1.FSGroupChangeOnRootMismatch
	if err := SetOwnership(dir, fsGroupPod(gid, &policy), false); err != nil {
		t.Fatal(err)
	}
	if _, m := ownership(t, file); m != 0o600 {
		t.Errorf("OnRootMismatch with a matching root changed a file: %v", m)
	}
	always := corev1.FSGroupChangeAlways
	if err := SetOwnership(dir, fsGroupPod(gid, &always), false); err != nil {
		t.Fatal(err)
	}
	if _, m := ownership(t, file); m != 0o660 {
		t.Errorf("Always: file mode %v, want 0660", m)
	}
}

func TestSetOwnershipWithoutFSGroup(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := SetOwnership(dir, &corev1.Pod{}, false); err != nil {
		t.Fatal(err)
	}
	if _, m := ownership(t, dir); m != 0o700 {
		t.Errorf("without fsGroup the mode changed to %v", m)
	}
}

// TestEmptyDirMode: emptyDir.mode sets the directory's mode, the sticky
// bit too (01777 makes a /tmp); unset, it is 0777 as the kubelet makes it.
func TestEmptyDirMode(t *testing.T) {
	l := testLayout(t)
	sticky := int32(0o1777)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Mode: &sticky}}},
		{Name: "plain", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}}}
	p, err := Setup(l, pod, &Config{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"tmp": 0o777 | os.ModeSticky, "plain": 0o777} {
		info, err := os.Stat(p.Paths[name])
		if err != nil || info.Mode()&(os.ModePerm|os.ModeSticky) != want {
			t.Errorf("%s: mode %v, %v; want %v", name, info.Mode(), err, want)
		}
	}
}
