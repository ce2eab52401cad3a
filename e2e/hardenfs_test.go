package e2e

// What a container makes in its volumes and files cannot hang, blind or
// outgrow podrun (issue 27): a FIFO at a subPath, a tree nested past the
// usage walk's old depth, a termination-message file written without end,
// a device node in an emptyDir; a removal killed half-way; an untrusted
// state directory. Helpers are prefixed hf.

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fifoSwapPod: the init container writes the app's config file into the
// emptyDir; the app, which has that file as a subPath, swaps it for a FIFO
// and exits; restartPolicy Always restarts it.
func fifoSwapPod() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hf-fifo
spec:
  terminationGracePeriodSeconds: 10
  initContainers:
  - name: init
    image: %[1]s
    command: ["sh", "-c", "echo config > /data/conf"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", "rm -f /data/conf && mkfifo /data/conf; exit 1"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: data, mountPath: /etc/app.conf, subPath: conf}
  volumes:
  - {name: data, emptyDir: {}}
`, H.Image)
}

// TestSubPathFIFODoesNotWedgeThePod: the app swaps its subPath file for a
// FIFO and exits; over the restarts that follow (10 s, then 20 s of
// back-off: podrun once mounted the FIFO at the first and opened it for
// writing at the second, blocking for good with the pod's lock held), the
// FIFO is refused as CreateContainerConfigError naming it, and `podrun down`
// from another process ends within the pod's grace period.
func TestSubPathFIFODoesNotWedgeThePod(t *testing.T) {
	H.require(t)
	file, up := upForeground(t, "hf-fifo", fifoSwapPod(), "--wait=running")
	pod := waitStatus(t, "hf-fifo", 60*time.Second, "the app's first exit", func(p corev1.Pod) (bool, string) {
		if len(p.Status.ContainerStatuses) != 1 {
			return false, "no container status"
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil || cs.State.Terminated != nil, fmt.Sprintf("%+v", cs.State)
	})
	// Past the second restart (10 s + 20 s of back-off).
	time.Sleep(35 * time.Second)
	cs := podStatus(t, "hf-fifo").Status.ContainerStatuses[0]
	if w := cs.State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" || !strings.Contains(w.Message, `subPath "conf" is a FIFO`) {
		t.Errorf("the app's state %+v, want Waiting in CreateContainerConfigError naming the FIFO", cs.State)
	}
	down := H.Start(t, "down", file)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- down.Wait() }()
	select {
	case err := <-done:
		took := time.Since(start)
		t.Logf("down took %v", took.Round(time.Millisecond))
		if err != nil {
			t.Errorf("down: %v\n%s", err, down.Stderr.(*CmdOutput).String())
		}
		if took > 10*time.Second {
			t.Errorf("down took %v, more than the pod's grace period (10 s)", took)
		}
	case <-time.After(30 * time.Second):
		// Unwedge what podrun blocks on (a reader lets an open for
		// writing through), so that the test can clean up, then fail.
		readers := openFIFOs(t, filepath.Join(H.Root, "pods", string(pod.UID), "volume-subpaths"))
		defer func() {
			for _, r := range readers {
				r.Close()
			}
		}()
		<-done
		t.Fatalf("down from another process still waits after 30 s (%d FIFOs at subPath targets opened to unwedge it)", len(readers))
	}
	up.stop(t, 30*time.Second)
	checkPodGone(t, "hf-fifo", string(pod.UID))
}

// openFIFOs opens for reading (without blocking) every FIFO below dir.
func openFIFOs(t *testing.T, dir string) []*os.File {
	var out []*os.File
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode()&os.ModeNamedPipe != 0 {
			if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				out = append(out, f)
			}
		}
		return nil
	})
	t.Logf("opened %d FIFOs below %s", len(out), dir)
	return out
}

// TestEvictionDeepTree: 4 MiB written 300 directories deep into a 1Mi
// emptyDir (the usage walk once gave up at 256 levels, and a volume it
// could not measure was never evicted) is evicted with the kubelet's
// message.
func TestEvictionDeepTree(t *testing.T) {
	H.require(t)
	yaml := strings.Replace(diskHogPod("hf-deep"), "dd if=/dev/zero of=/scratch/fill",
		"d=/scratch; for i in $(seq 300); do d=$d/d; done; mkdir -p $d && dd if=/dev/zero of=$d/fill", 1)
	_, up := upForeground(t, "hf-deep", yaml)
	pod := waitEvicted(t, "hf-deep", 45*time.Second)
	if code, _ := up.terminate(t, 60*time.Second); code != 0 {
		t.Errorf("up -f exit %d after SIGTERM; stderr:\n%s", code, up.stderr())
	}
	checkPodGone(t, "hf-deep", string(pod.UID))
}

// TestContainerFilesBounded: a container that writes 2 MiB to its
// termination-message file fills its pod's 1 MiB tmpfs, not the state
// filesystem, and the message is its last 4096 bytes at most; a device
// node it makes in its emptyDir (CAP_MKNOD is in the default set) does not
// open (the volume is mounted nodev).
func TestContainerFilesBounded(t *testing.T) {
	H.require(t)
	mustRunUp(t, "hf-files", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hf-files
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "mknod /data/null c 1 3 && if echo x > /data/null; then echo device opened; else echo device refused; fi; dd if=/dev/zero of=/dev/termination-log bs=65536 count=32 2>/dev/null; echo dd exit $?"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, emptyDir: {}}
`, H.Image))
	pod := podStatus(t, "hf-files")
	out, stderr, code := H.Podrun(t, "", "logs", "hf-files")
	if code != 0 {
		t.Fatalf("logs: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(out, "device refused") || !strings.Contains(out, "dd exit 1") {
		t.Errorf("logs %q, want the device refused and dd failing (ENOSPC)", out)
	}
	logs, _ := filepath.Glob(filepath.Join(H.Root, "pods", string(pod.UID), "containers", "app", "*"))
	for _, l := range logs {
		if st, err := os.Stat(l); err == nil && st.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, over the 1 MiB bound", l, st.Size())
		}
	}
	if len(logs) == 0 {
		t.Error("no termination-message file found")
	}
	cs := pod.Status.ContainerStatuses[0]
	if term := cs.State.Terminated; term == nil || len(term.Message) > 4096 || len(term.Message) == 0 {
		t.Errorf("terminated state %+v: want a message of at most 4096 bytes", cs.State)
	}
}

// TestKill9DuringPodDirRemoval: `podrun down` is killed with SIGKILL while
// it removes the directory of a pod with a big emptyDir; whatever the
// moment, the pod directory is never left without its record, the next
// podrun (here `ps`) sweeps a directory renamed for removal, and `down`
// leaves nothing.
func TestKill9DuringPodDirRemoval(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "hf-rm.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hf-rm
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, emptyDir: {}}
`, H.Image))
	downOnCleanup(t, file)
	client, ctx := H.Client(t)
	rng := rand.New(rand.NewSource(20270127))
	renamed := 0
	const trials = 6
	for trial := range trials {
		if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
			t.Fatalf("trial %d: up: exit %d\n%s", trial, code, stderr)
		}
		uid := string(podStatus(t, "hf-rm").UID)
		podDir := filepath.Join(H.Root, "pods", uid)
		fillDir(t, filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "data"), 40, 1000)
		p := H.Start(t, "down", file)
		// The directory goes once the containers are gone.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			ctrs, err := client.Containers(ctx, fmt.Sprintf("labels.%q==%q", labelPodUID, uid))
			if err != nil {
				t.Fatal(err)
			}
			if len(ctrs) == 0 {
				break
			}
		}
		after := time.Duration(rng.Int63n(int64(400 * time.Millisecond)))
		time.Sleep(after)
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
		_, dirErr := os.Lstat(podDir)
		_, recErr := os.Lstat(filepath.Join(podDir, "pod.json"))
		_, goneErr := os.Lstat(filepath.Join(H.Root, "pods", ".removing-"+uid))
		if dirErr == nil && recErr != nil {
			t.Errorf("trial %d (killed %v after the containers went): %s left without its record", trial, after, podDir)
		}
		if goneErr == nil {
			renamed++
		}
		if _, stderr, code := H.Podrun(t, "", "ps", "-a"); code != 0 {
			t.Fatalf("trial %d: ps: exit %d\n%s", trial, code, stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(H.Root, "pods", ".removing-*")); len(left) != 0 {
			t.Errorf("trial %d: left after the next podrun: %v", trial, left)
		}
		if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
			t.Fatalf("trial %d: down: exit %d\n%s", trial, code, stderr)
		}
		if _, err := os.Lstat(podDir); !os.IsNotExist(err) {
			t.Errorf("trial %d: %s left after down (%v)", trial, podDir, err)
		}
		if m := e2eMountsUnder(podDir); len(m) != 0 {
			t.Errorf("trial %d: mounts left: %v", trial, m)
		}
		t.Logf("trial %d: killed %v after the containers went; renamed for removal: %v", trial, after.Round(time.Millisecond), goneErr == nil)
	}
	t.Logf("%d of %d kills landed after the rename", renamed, trials)
}

// fillDir writes dirs×files empty files under dir.
func fillDir(t *testing.T, dir string, dirs, files int) {
	t.Helper()
	for d := range dirs {
		sub := filepath.Join(dir, fmt.Sprint(d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprint(f)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDaemonRefusesUntrustedStateDirs: a --root others may write, or a
// --run-dir that is a symlink, stops the daemon before it does anything,
// with exit code 2 and the reason.
func TestDaemonRefusesUntrustedStateDirs(t *testing.T) {
	H.require(t)
	base := t.TempDir()
	root, real, link := filepath.Join(base, "root"), filepath.Join(base, "real"), filepath.Join(base, "run")
	for _, d := range []string{root, real} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	oldRoot, oldRun := H.Root, H.RunDir
	defer func() { H.Root, H.RunDir = oldRoot, oldRun }()
	for _, tc := range []struct{ root, run, want string }{
		{root, oldRun, root + " is writable by its group or by others (mode 0777)"},
		{oldRoot, link, link + " is a symlink"},
	} {
		H.Root, H.RunDir = tc.root, tc.run
		_, stderr, code := H.Podrun(t, "", "daemon", "--manifest-dir", t.TempDir())
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("daemon with --root %s --run-dir %s: exit %d, stderr %q; want 2 and %q", tc.root, tc.run, code, stderr, tc.want)
		}
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("the refused root was written: %v %v", entries, err)
	}
}
