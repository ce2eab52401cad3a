package volumes

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func hostPathPod(path string, typ corev1.HostPathType) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &typ}}}}}}
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		path    string
		typ     corev1.HostPathType
		wantErr string
	}{
		{dir, corev1.HostPathUnset, ""},
		{filepath.Join(dir, "missing-unset"), corev1.HostPathUnset, ""}, // created as a directory, as containerd's CRI does
		{dir, corev1.HostPathDirectory, ""},
		{file, corev1.HostPathDirectory, "is not a directory"},
		{filepath.Join(dir, "missing"), corev1.HostPathDirectory, "does not exist"},
		{file, corev1.HostPathFile, ""},
		{dir, corev1.HostPathFile, "is not a file"},
		{sock, corev1.HostPathSocket, ""},
		{file, corev1.HostPathSocket, "is not a socket"},
		{"/dev/null", corev1.HostPathCharDev, ""},
		{file, corev1.HostPathCharDev, "is not a character device"},
		{"/dev/null", corev1.HostPathBlockDev, "is not a block device"},
		{file, corev1.HostPathDirectoryOrCreate, "is not a directory"},
		{dir, corev1.HostPathFileOrCreate, "is not a file"},
	}
	for _, tt := range tests {
		_, err := Setup(testLayout(t), hostPathPod(tt.path, tt.typ), nil, Options{})
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s %q: unexpected error %v", tt.typ, tt.path, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s %q: error %v, want %q", tt.typ, tt.path, err, tt.wantErr)
		}
	}
}

func TestOrCreateMakesAndUndoRemovesOnlyWhatItMade(t *testing.T) {
	dir := t.TempDir()
	newDir := filepath.Join(dir, "a", "b")
	p, err := Setup(testLayout(t), hostPathPod(newDir, corev1.HostPathDirectoryOrCreate), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(newDir); err != nil || !st.IsDir() || st.Mode().Perm() != 0o755 {
		t.Fatalf("DirectoryOrCreate made %v, %v", st, err)
	}
	newFile := filepath.Join(dir, "f")
	q, err := Setup(testLayout(t), hostPathPod(newFile, corev1.HostPathFileOrCreate), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(newFile); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("FileOrCreate made %v, %v", st, err)
	}
	// The user wrote into the file meanwhile: undo must keep it.
	if err := os.WriteFile(newFile, []byte("user data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Undo(); err != nil {
		t.Fatal(err)
	}
	if err := q.Undo(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(newDir); !os.IsNotExist(err) {
		t.Errorf("undo left the directory it made: %v", err)
	}
	if data, err := os.ReadFile(newFile); err != nil || string(data) != "user data" {
		t.Errorf("undo touched the user's file: %q, %v", data, err)
	}
}

func TestSubPath(t *testing.T) {
	vol := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(vol, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(vol, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("inside", filepath.Join(vol, "link-in")); err != nil {
		t.Fatal(err)
	}
	p := &Prepared{layout: testLayout(t), Paths: map[string]string{"v": vol}}
	mount := func(sub string) (string, error) {
		ms, err := p.Mounts(&corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPath: sub}}}, nil)
		if err != nil {
			return "", err
		}
		return ms[0].Source, nil
	}
	real, _ := filepath.EvalSymlinks(vol)
	if src, err := mount("new/dir"); err != nil || !sameFile(src, filepath.Join(real, "new/dir")) {
		t.Errorf("missing subPath: %q, %v", src, err)
	} else if st, err := os.Stat(filepath.Join(real, "new/dir")); err != nil || !st.IsDir() {
		t.Errorf("missing subPath not created: %v", err)
	}
	if src, err := mount("link-in"); err != nil || !sameFile(src, filepath.Join(real, "inside")) {
		t.Errorf("symlink inside the volume: %q, %v", src, err)
	}
	for _, sub := range []string{"escape", "up", "escape/x"} {
		if src, err := mount(sub); err == nil || !strings.Contains(err.Error(), "outside its volume") {
			t.Errorf("subPath %q escaping the volume: %q, %v", sub, src, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("a subPath created a directory outside its volume")
	}
}

// testLayout is a pod directory for one test, removed (with every bind
// mount a test made below it) when the test ends.
func testLayout(t *testing.T) Layout {
	t.Helper()
	l := Layout{Root: t.TempDir(), UID: "u"}
	t.Cleanup(func() {
		if err := l.Remove(); err != nil {
			t.Errorf("removing the pod directory: %v", err)
		}
	})
	return l
}

// sameFile reports whether two paths are the same inode (a bind mount of
// a directory is the directory).
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// TestAllowedHostPathsResolved: a symlink under an allowed prefix does not
// admit the host path it points to; a path really under the prefix is
// mounted, and *OrCreate never creates outside the prefix.
func TestAllowedHostPathsResolved(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(allowed, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(allowed, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{AllowedHostPaths: []string{allowed}}
	for _, tt := range []struct {
		path string
		typ  corev1.HostPathType
	}{
		{filepath.Join(allowed, "escape"), corev1.HostPathDirectory},
		{filepath.Join(allowed, "escape"), corev1.HostPathUnset},
		{filepath.Join(allowed, "escape", "new"), corev1.HostPathDirectoryOrCreate},
		{filepath.Join(allowed, "escape", "new-file"), corev1.HostPathFileOrCreate},
	} {
		p, err := Setup(testLayout(t), hostPathPod(tt.path, tt.typ), nil, o)
		if err == nil && sameFile(p.Paths["v"], outside) {
			t.Errorf("%s %s: the directory outside the allowed prefix was mounted", tt.typ, tt.path)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("created outside the allowed prefix: %v", entries)
	}
	for _, path := range []string{filepath.Join(allowed, "data"), allowed} {
		p, err := Setup(testLayout(t), hostPathPod(path, corev1.HostPathDirectory), nil, o)
		if err != nil || !sameFile(p.Paths["v"], path) {
			t.Errorf("%s, under the allowed prefix: %v, %v", path, p, err)
		}
	}
}

// TestLocateNeverTouchesVolumes: adoption finds the volumes as they are; a
// file a container re-owned keeps its group and mode, and the emptyDir its
// mode, whatever fsGroup says.
func TestLocateNeverTouchesVolumes(t *testing.T) {
	gid := fsGroupForTest()
	l := testLayout(t)
	pod := fsGroupPod(gid, nil, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	p, err := Setup(l, pod, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := p.Paths["scratch"]
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(file, -1, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	q, err := Locate(l, pod, Options{})
	if err != nil || q.Paths["scratch"] != dir {
		t.Fatalf("Locate: %v, %v", q, err)
	}
	if g, m := ownership(t, file); g != 0 || m != 0o600 {
		t.Errorf("Locate changed a file in the volume: group %d mode %v", g, m)
	}
	if _, m := ownership(t, dir); m != 0o700 {
		t.Errorf("Locate chmod'ed the volume: %v", m)
	}
	if _, err := Locate(testLayout(t), pod, Options{}); err == nil {
		t.Error("Locate of an emptyDir that was never made succeeded")
	}
}
