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
		{filepath.Join(dir, "missing"), corev1.HostPathUnset, ""},
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
		_, err := Setup(Layout{Root: t.TempDir(), UID: "u"}, hostPathPod(tt.path, tt.typ), nil)
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
	p, err := Setup(Layout{Root: t.TempDir(), UID: "u"}, hostPathPod(newDir, corev1.HostPathDirectoryOrCreate), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(newDir); err != nil || !st.IsDir() || st.Mode().Perm() != 0o755 {
		t.Fatalf("DirectoryOrCreate made %v, %v", st, err)
	}
	newFile := filepath.Join(dir, "f")
	q, err := Setup(Layout{Root: t.TempDir(), UID: "u"}, hostPathPod(newFile, corev1.HostPathFileOrCreate), nil)
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
	p := &Prepared{Paths: map[string]string{"v": vol}}
	mount := func(sub string) (string, error) {
		ms, err := Mounts(&corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPath: sub}}}, p, nil)
		if err != nil {
			return "", err
		}
		return ms[0].Source, nil
	}
	real, _ := filepath.EvalSymlinks(vol)
	if src, err := mount("new/dir"); err != nil || src != filepath.Join(real, "new/dir") {
		t.Errorf("missing subPath: %q, %v", src, err)
	} else if st, err := os.Stat(src); err != nil || !st.IsDir() {
		t.Errorf("missing subPath not created: %v", err)
	}
	if src, err := mount("link-in"); err != nil || src != filepath.Join(real, "inside") {
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
