package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	shim "github.com/containerd/containerd/api/runtime/task/v2"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/ttrpc"
)

// TestStaleTaskOfAKilledDelete: a podrun killed while containerd deleted
// a task (the shim had deleted it, containerd had not heard back) leaves
// the task in containerd's list, its bundle and its shim; containerd asks
// the shim for the task's state and finds nothing, and every create of that
// id fails with "already exists" (found by the kill -9 trials). It is made
// here by deleting the task at its shim, behind containerd's back: `down`
// removes it without waiting for a create that is not in flight, and the
// pod comes up again.
func TestStaleTaskOfAKilledDelete(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "st-stale.yaml", `apiVersion: v1
kind: Pod
metadata: {name: st-stale}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sleep", "3600"]
`)
	downOnCleanup(t, file)
	for round := range 2 {
		if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
			t.Fatalf("round %d: up: exit %d\n%s", round, code, stderr)
		}
		ctrs := podContainers(t, "st-stale")
		id := ""
		for _, c := range ctrs {
			if strings.HasSuffix(c.ID(), "-app-0") {
				id = c.ID()
			}
		}
		if id == "" {
			t.Fatalf("round %d: no app container among %d", round, len(ctrs))
		}
		makeStaleTask(t, id)
		c, ctx := H.Client(t)
		ctr, err := c.LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ctr.Task(ctx, nil); err == nil {
			t.Fatalf("round %d: containerd still finds the task its shim deleted", round)
		}
		start := time.Now()
		if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
			t.Fatalf("round %d: down: exit %d\n%s", round, code, stderr)
		}
		// A create in flight is waited for up to 30 s: this one is not.
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("round %d: down took %v: it waited for a create that was not in flight", round, took)
		}
		if _, err := os.Stat(taskBundle(id)); !os.IsNotExist(err) {
			t.Errorf("round %d: the task's bundle is left: %v", round, err)
		}
	}
}

// taskBundle is the runtime's directory of task id.
func taskBundle(id string) string {
	return filepath.Join(H.TmpDir, "containerd", "state", "io.containerd.runtime.v2.task", H.Namespace, id)
}

// makeStaleTask kills task id and deletes it at its shim, leaving
// containerd's record of it.
func makeStaleTask(t *testing.T, id string) {
	t.Helper()
	addr, err := os.ReadFile(filepath.Join(taskBundle(id), "address"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://"))
	if err != nil {
		t.Fatal(err)
	}
	client := ttrpc.NewClient(conn)
	defer client.Close()
	task := shim.NewTaskClient(client)
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), H.Namespace), 30*time.Second)
	defer cancel()
	if _, err := task.Kill(ctx, &shim.KillRequest{ID: id, Signal: uint32(syscall.SIGKILL), All: true}); err != nil {
		t.Fatalf("kill at the shim: %v", err)
	}
	for {
		st, err := task.State(ctx, &shim.StateRequest{ID: id})
		if err != nil {
			t.Fatalf("state at the shim: %v", err)
		}
		if st.Status.String() == "STOPPED" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := task.Delete(ctx, &shim.DeleteRequest{ID: id}); err != nil {
		t.Fatalf("delete at the shim: %v", err)
	}
}
