package volumes

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// mountsWithin runs p.Mounts(c) and fails the test if it does not return
// within 10 s (a FIFO opened for writing blocks until a reader comes).
func mountsWithin(t *testing.T, p *Prepared, c *corev1.Container) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := p.Mounts(c, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Mounts still blocks after 10 s: it opened a FIFO")
		return nil
	}
}

// TestSubPathRefusesSpecialFiles: a FIFO, a socket or a device node at a
// subPath is refused, with the path named, without ever being opened.
func TestSubPathRefusesSpecialFiles(t *testing.T) {
	vol := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(vol, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(vol, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := unix.Mknod(filepath.Join(vol, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	p := &Prepared{layout: testLayout(t), Paths: map[string]string{"v": vol}}
	for i, sub := range []string{"fifo", "sock", "null"} {
		c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPath: sub}}}
		err := mountsWithin(t, p, c)
		if err == nil || !strings.Contains(err.Error(), `"`+sub+`"`) {
			t.Errorf("subPath %q: error %v, want a refusal naming it", sub, err)
		}
		if isMountPoint(p.layout.SubPath("v", "c", 0)) {
			t.Errorf("subPath %q (%d): mounted", sub, i)
		}
	}
}

// TestSubPathRestartLeavesMountedTargetUnopened: a container restarts
// after its volume's subPath file was swapped for a FIFO, and the subPath
// target already holds a FIFO mounted over it (what an earlier podrun
// made): Mounts never opens the target, refuses the FIFO source, and then
// mounts a regular file again once it is back.
func TestSubPathRestartLeavesMountedTargetUnopened(t *testing.T) {
	vol := t.TempDir()
	file := filepath.Join(vol, "p")
	if err := os.WriteFile(file, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	p := &Prepared{layout: testLayout(t), Paths: map[string]string{"v": vol}}
	c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPath: "p"}}}
	if err := mountsWithin(t, p, c); err != nil {
		t.Fatal(err)
	}
	target := p.layout.SubPath("v", "c", 0)
	if !sameFile(target, file) {
		t.Fatal("the subPath file is not mounted at its target")
	}
	// A FIFO mounted at the target instead, as podrun once mounted a FIFO
	// source.
	other := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(other, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := unmountAll(target); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(other, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	// The container swaps its file for a FIFO and exits.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(file, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := mountsWithin(t, p, c); err == nil || !strings.Contains(err.Error(), `"p"`) {
		t.Errorf("restart over a FIFO source: error %v, want a refusal naming the subPath", err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("y"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := mountsWithin(t, p, c); err != nil {
		t.Fatal(err)
	}
	if !sameFile(target, file) {
		t.Error("the new subPath file is not what is mounted at the target")
	}
	var st unix.Stat_t
	if err := unix.Lstat(target, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Errorf("target: %v, mode %o", err, st.Mode)
	}
}

// TestSubPathTargetKeptWhenSame: a target that is a mount point of the
// very subPath already is left alone (the kubelet's
// prepareSubpathTarget); one of a directory replaced by a file is made
// again as a file.
func TestSubPathTargetKeptWhenSame(t *testing.T) {
	vol := t.TempDir()
	if err := os.Mkdir(filepath.Join(vol, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Prepared{layout: testLayout(t), Paths: map[string]string{"v": vol}}
	c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPath: "d"}}}
	for range 2 {
		if err := mountsWithin(t, p, c); err != nil {
			t.Fatal(err)
		}
	}
	target := p.layout.SubPath("v", "c", 0)
	if mounts, err := mountsBelow(target); err != nil || len(mounts) != 1 {
		t.Errorf("mounts at the target after two starts: %v %v, want one", mounts, err)
	}
	// The directory becomes a file: the target becomes a file too.
	if err := os.Remove(filepath.Join(vol, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "d"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mountsWithin(t, p, c); err != nil {
		t.Fatal(err)
	}
	if !sameFile(target, filepath.Join(vol, "d")) {
		t.Error("the file is not what is mounted at the target")
	}
}

// TestDiskVolumesMountedNoDev: the mounts of a disk-backed emptyDir (and
// of its subPaths) are nodev; a hostPath's are not (it may be /dev).
func TestDiskVolumesMountedNoDev(t *testing.T) {
	l := testLayout(t)
	if err := l.Make("pod.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	typ := corev1.HostPathDirectory
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.TempDir(), Type: &typ}}},
	}}}
	p, err := Setup(l, pod, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Undo()
	c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/s"}, {Name: "scratch", MountPath: "/sub", SubPath: "d"}, {Name: "host", MountPath: "/h"}}}
	ms, err := p.Mounts(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if ms[i].NoDev != want {
			t.Errorf("mount %s: NoDev %v, want %v", ms[i].Destination, ms[i].NoDev, want)
		}
	}
}
