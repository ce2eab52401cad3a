package e2e

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestAttachStdinTTY: a shell with stdin and a terminal keeps running
// (its stdin stays open with nobody attached); `podrun attach -i` reaches
// it, ctrl-p ctrl-q detaches and the shell keeps running; what it printed
// is in its log; down ends its stream keeper.
func TestAttachStdinTTY(t *testing.T) {
	H.require(t)
	mustRunUp(t, "at-shell", `apiVersion: v1
kind: Pod
metadata:
  name: at-shell
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: `+H.Image+`
    command: ["sh"]
    stdin: true
    tty: true
`)
	time.Sleep(time.Second) // a shell without stdin would have exited by now
	running := func(what string) {
		t.Helper()
		st := podStatus(t, "at-shell")
		cs := st.Status.ContainerStatuses
		if len(cs) != 1 || cs[0].State.Running == nil || cs[0].RestartCount != 0 {
			t.Fatalf("%s: the shell is not running: %+v", what, cs)
		}
	}
	running("after up")

	cmd := exec.Command(H.Bin, append(H.globalArgs(), "attach", "-i", "at-shell")...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr CmdOutput
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	seen := make(chan string, 1)
	go func() {
		var got strings.Builder
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			got.WriteString(line)
			if strings.Contains(line, "attached-42") || err != nil {
				seen <- got.String()
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
	}()
	if _, err := io.WriteString(in, "echo attached-$((6*7))\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		if !strings.Contains(got, "attached-42") {
			t.Fatalf("attach output %q lacks the command's output; stderr: %s", got, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no output through attach in 30s; stderr: %s", stderr.String())
	}
	if _, err := in.Write([]byte{0x10, 0x11}); err != nil { // ctrl-p ctrl-q
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("attach after detach keys: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("attach did not detach on ctrl-p ctrl-q")
	}
	running("after detach")
	if log := finishedLog(t, "at-shell", "sh"); !strings.Contains(log, "attached-42") {
		t.Errorf("the log lacks the shell's output:\n%s", log)
	}
}

// TestAttachStdinOnce: a container with stdin and stdinOnce waits for its
// input; `podrun attach -i` gives it, and the end of that input closes its
// stdin: cat ends, the container finishes, attach returns its output.
func TestAttachStdinOnce(t *testing.T) {
	H.require(t)
	mustRunUp(t, "at-once", `apiVersion: v1
kind: Pod
metadata:
  name: at-once
spec:
  restartPolicy: Never
  containers:
  - name: cat
    image: `+H.Image+`
    command: ["sh", "-c", "cat; echo stdin-closed"]
    stdin: true
    stdinOnce: true
`, "--wait=running")
	stdout, stderr, code := H.Podrun(t, "hello\n", "attach", "-i", "at-once")
	if code != 0 || stdout != "hello\nstdin-closed\n" {
		t.Errorf("attach -i: exit %d, stdout %q, want \"hello\\nstdin-closed\\n\"; stderr:\n%s", code, stdout, stderr)
	}
	waitStatus(t, "at-once", 30*time.Second, "Succeeded", func(p corev1.Pod) (bool, string) {
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase)
	})
}
