package fake

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newEngine returns an engine whose clock ticks one second per reading.
func newEngine() *Engine {
	e := New()
	var mu sync.Mutex
	now := t0
	e.Clock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	e.AddImage(engine.Image{Ref: "busybox", Digest: "sha256:b", Size: 42})
	return e
}

func mustStart(t *testing.T, e *Engine, id string, labels map[string]string) uint32 {
	t.Helper()
	ctx := context.Background()
	if err := e.Create(ctx, engine.ContainerSpec{ID: id, Image: "busybox", Labels: labels}); err != nil {
		t.Fatal(err)
	}
	pid, err := e.Start(ctx, id, "/logs/"+id+"/0.log")
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func recv(t *testing.T, ch <-chan engine.TaskExit) engine.TaskExit {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("exits stream closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no exit event")
	}
	return engine.TaskExit{}
}

func TestLifecycleAndList(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	p1 := mustStart(t, e, "a", map[string]string{"pod": "web", "n": "1"})
	if err := e.Create(ctx, engine.ContainerSpec{ID: "b", Labels: map[string]string{"pod": "web"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Create(ctx, engine.ContainerSpec{ID: "b"}); err == nil {
		t.Fatal("second Create of b succeeded")
	}
	p2, err := e.Start(ctx, "b", "")
	if err != nil {
		t.Fatal(err)
	}
	if p2 != p1+1 {
		t.Fatalf("pids %d then %d, want incrementing", p1, p2)
	}
	if _, err := e.Start(ctx, "b", ""); err == nil {
		t.Fatal("Start with a task present succeeded")
	}
	if err := e.SetLabels(ctx, "b", map[string]string{"n": "2"}); err != nil {
		t.Fatal(err)
	}

	got, err := e.List(ctx, map[string]string{"pod": "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Fatalf("List = %+v", got)
	}
	a := got[0]
	if a.Image != "docker.io/library/busybox:latest" || !a.CreatedAt.Equal(t0.Add(time.Second)) ||
		a.Task.State != engine.TaskRunning || a.Task.PID != p1 {
		t.Fatalf("a = %+v", a)
	}
	if got[1].Image != "" || got[1].Labels["n"] != "2" {
		t.Fatalf("b = %+v", got[1])
	}
	only, _ := e.List(ctx, map[string]string{"n": "2"})
	if len(only) != 1 || only[0].ID != "b" {
		t.Fatalf("List n=2 = %+v", only)
	}
	got[1].Labels["n"] = "mutated"
	if again, _ := e.List(ctx, map[string]string{"n": "2"}); len(again) != 1 {
		t.Fatal("List returned the engine's own label map")
	}

	if e.LogPath("a") != "/logs/a/0.log" {
		t.Fatalf("LogPath = %q", e.LogPath("a"))
	}
	if ts, err := e.Task(ctx, "a"); err != nil || ts.State != engine.TaskRunning {
		t.Fatalf("Task = %+v, %v", ts, err)
	}

	// Restart: a stopped task must be deleted before the next Start.
	e.Exit("a", 3)
	exit, err := e.DeleteTask(ctx, "a")
	if err != nil || exit.Code != 3 {
		t.Fatalf("DeleteTask = %+v, %v", exit, err)
	}
	if ts, _ := e.Task(ctx, "a"); ts.State != engine.TaskNone {
		t.Fatalf("task after DeleteTask = %+v", ts)
	}
	if p3, err := e.Start(ctx, "a", ""); err != nil || p3 != p2+1 {
		t.Fatalf("restart = %d, %v", p3, err)
	}

	if err := e.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if rest, _ := e.List(ctx, nil); len(rest) != 1 || rest[0].ID != "b" {
		t.Fatalf("after Delete: %+v", rest)
	}
}

func TestNotFoundAndAlreadyGone(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	for name, err := range map[string]error{
		"Image":      second(e.Image(ctx, "nginx")),
		"Pull":       second(e.Pull(ctx, "nginx", engine.PullOptions{})),
		"Create":     e.Create(ctx, engine.ContainerSpec{ID: "x", Image: "nginx"}),
		"Start":      second(e.Start(ctx, "nope", "")),
		"Wait":       second(e.Wait(ctx, "nope")),
		"DeleteTask": second(e.DeleteTask(ctx, "nope")),
		"Task":       second(e.Task(ctx, "nope")),
		"Exec":       second(e.Exec(ctx, "nope", engine.ExecSpec{})),
		"SetLabels":  e.SetLabels(ctx, "nope", map[string]string{"a": "b"}),
	} {
		if !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
	// Removals of what is not there succeed.
	if err := e.Delete(ctx, "nope"); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if err := e.Kill(ctx, "nope", syscall.SIGKILL); err != nil {
		t.Errorf("Kill: %v", err)
	}
	// A container without a task: DeleteTask and Wait have no task to act on.
	if err := e.Create(ctx, engine.ContainerSpec{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteTask(ctx, "c"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("DeleteTask without task: %v", err)
	}
	if err := e.Kill(ctx, "c", syscall.SIGTERM); err != nil {
		t.Errorf("Kill without task: %v", err)
	}
	if _, err := e.Exec(ctx, "c", engine.ExecSpec{}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Exec without task: %v", err)
	}
}

// waitCall waits until call has been recorded (a Wait records its call and
// takes the task in one step, so it is then waiting).
func waitCall(t *testing.T, e *Engine, call string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if slices.Contains(e.Calls(), call) {
			return
		}
	}
	t.Fatalf("no call %q in %q", call, e.Calls())
}

func second[T any](_ T, err error) error { return err }

func TestImagesPullImport(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	if img, err := e.Image(ctx, "docker.io/library/busybox:latest"); err != nil || img.Digest != "sha256:b" || img.Size != 0 {
		t.Fatalf("Image = %+v, %v", img, err)
	}
	e.AddRemote(engine.Image{Ref: "ghcr.io/x/app:v1", Digest: "sha256:a"})
	img, err := e.Pull(ctx, "ghcr.io/x/app:v1", engine.PullOptions{})
	if err != nil || img.Ref != "ghcr.io/x/app:v1" {
		t.Fatalf("Pull = %+v, %v", img, err)
	}
	if _, err := e.Import(ctx, strings.NewReader("x")); err == nil {
		t.Fatal("Import without ImportFunc succeeded")
	}
	e.ImportFunc = func(r io.Reader) ([]engine.Image, error) {
		b, _ := io.ReadAll(r)
		return []engine.Image{{Ref: string(b), Digest: "sha256:c"}}, nil
	}
	imp, err := e.Import(ctx, strings.NewReader("localhost:5000/tool"))
	if err != nil || len(imp) != 1 || imp[0].Ref != "localhost:5000/tool:latest" {
		t.Fatalf("Import = %+v, %v", imp, err)
	}
	all, err := e.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, i := range all {
		refs = append(refs, i.Ref)
	}
	want := []string{"docker.io/library/busybox:latest", "ghcr.io/x/app:v1", "localhost:5000/tool:latest"}
	if !slices.Equal(refs, want) || all[0].Size != 42 {
		t.Fatalf("Images = %+v", all)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                             "docker.io/library/busybox:latest",
		"busybox:1.36":                        "docker.io/library/busybox:1.36",
		"docker.io/busybox":                   "docker.io/library/busybox:latest",
		"user/app":                            "docker.io/user/app:latest",
		"quay.io/a/b:v2":                      "quay.io/a/b:v2",
		"localhost:5000/a":                    "localhost:5000/a:latest",
		"localhost/a":                         "localhost/a:latest",
		"busybox@sha256:abc":                  "docker.io/library/busybox@sha256:abc",
		"registry:5000/team/app:1@sha256:abc": "registry:5000/team/app:1@sha256:abc",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKillExitWaitAndEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newEngine()
	ev1, _ := e.Exits(ctx)
	ev2, _ := e.Exits(ctx)
	mustStart(t, e, "term", nil)
	mustStart(t, e, "stubborn", nil)
	mustStart(t, e, "quits", nil)
	e.IgnoreSignals("stubborn")

	waited := make(chan engine.Exit, 1)
	go func() {
		exit, err := e.Wait(ctx, "term")
		if err != nil {
			t.Error(err)
		}
		waited <- exit
	}()
	if err := e.Kill(ctx, "term", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case exit := <-waited:
		if exit.Code != CodeTerminated || exit.ExitedAt.IsZero() {
			t.Fatalf("Wait = %+v", exit)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after SIGTERM")
	}
	for _, ch := range []<-chan engine.TaskExit{ev1, ev2} {
		if ev := recv(t, ch); ev.ContainerID != "term" || ev.Code != 143 {
			t.Fatalf("event = %+v", ev)
		}
	}

	// Ignored signals leave the task running; SIGKILL always ends it.
	if err := e.Kill(ctx, "stubborn", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ts, _ := e.Task(ctx, "stubborn"); ts.State != engine.TaskRunning {
		t.Fatalf("stubborn after SIGTERM: %+v", ts)
	}
	if err := e.Kill(ctx, "stubborn", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if exit, err := e.Wait(ctx, "stubborn"); err != nil || exit.Code != CodeKilled {
		t.Fatalf("stubborn Wait = %+v, %v", exit, err)
	}
	if ev := recv(t, ev1); ev.ContainerID != "stubborn" || ev.Code != 137 {
		t.Fatalf("event = %+v", ev)
	}

	// A test-driven exit; killing a finished task is fine and changes nothing.
	e.Exit("quits", 7)
	if err := e.Kill(ctx, "quits", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if exit, _ := e.Wait(ctx, "quits"); exit.Code != 7 {
		t.Fatalf("quits Wait = %+v", exit)
	}
	if ev := recv(t, ev1); ev.ContainerID != "quits" || ev.Code != 7 {
		t.Fatalf("event = %+v", ev)
	}

	// Delete of a running task kills it: waiters return, an event is sent.
	mustStart(t, e, "del", nil)
	go func() {
		exit, _ := e.Wait(ctx, "del")
		waited <- exit
	}()
	waitCall(t, e, "Wait del")
	if err := e.Delete(ctx, "del"); err != nil {
		t.Fatal(err)
	}
	if exit := <-waited; exit.Code != CodeKilled {
		t.Fatalf("Wait on deleted = %+v", exit)
	}
	if ev := recv(t, ev1); ev.ContainerID != "del" || ev.Code != 137 {
		t.Fatalf("event = %+v", ev)
	}

	want := []string{
		"Exits", "Exits",
		"Create term", "Start term", "Create stubborn", "Start stubborn", "Create quits", "Start quits",
	}
	if got := e.Calls(); !slices.Equal(got[:len(want)], want) {
		t.Fatalf("Calls = %q", got)
	}
	calls := strings.Join(e.Calls(), "|")
	for _, c := range []string{"Kill term SIGTERM", "Kill stubborn SIGTERM", "Kill stubborn SIGKILL", "Delete del"} {
		if !strings.Contains(calls, c) {
			t.Errorf("Calls lack %q: %s", c, calls)
		}
	}
}

func TestCustomKillBehaviour(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	e.KillBehaviour = func(_ string, sig syscall.Signal, _ bool) (bool, uint32) {
		return sig != 0, 128 + uint32(sig)
	}
	mustStart(t, e, "q", nil)
	_ = e.Kill(ctx, "q", syscall.SIGQUIT)
	if ts, _ := e.Task(ctx, "q"); ts.State != engine.TaskStopped || ts.ExitCode != 131 {
		t.Fatalf("task = %+v", ts)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	e := newEngine()
	mustStart(t, e, "a", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.Wait(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v", err)
	}
	// A cancelled context fails every call, as with a real client.
	if err := e.Delete(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Delete on cancelled ctx = %v", err)
	}
	if ts, _ := e.Task(context.Background(), "a"); ts.State != engine.TaskRunning {
		t.Fatalf("task = %+v", ts)
	}
}

func TestExitsEndWithContextAndBreak(t *testing.T) {
	e := newEngine()
	ctx, cancel := context.WithCancel(context.Background())
	ch, errc := e.Exits(ctx)
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after cancel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream not closed after cancel")
	}
	select {
	case err := <-errc:
		t.Fatalf("error after plain cancel: %v", err)
	default:
	}

	ch, errc = e.Exits(context.Background())
	mustStart(t, e, "a", nil)
	e.Exit("a", 1)
	broken := errors.New("containerd restarted")
	e.BreakExits(broken)
	if ev := recv(t, ch); ev.ContainerID != "a" {
		t.Fatalf("event = %+v", ev)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, broken) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no stream error")
	}
	if _, ok := <-ch; ok {
		t.Fatal("stream open after break")
	}
}

func TestFailInjectsOnce(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	boom := errors.New("boom")
	e.Fail("Create", boom)
	e.Fail("Delete", engine.ErrUnavailable)
	if err := e.Create(ctx, engine.ContainerSpec{ID: "a"}); !errors.Is(err, boom) {
		t.Fatalf("Create = %v", err)
	}
	if _, err := e.Task(ctx, "a"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal("failed Create left a container")
	}
	if err := e.Create(ctx, engine.ContainerSpec{ID: "a"}); err != nil {
		t.Fatalf("second Create = %v", err)
	}
	if err := e.Delete(ctx, "a"); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("Delete = %v", err)
	}
	if err := e.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	want := []string{"Create a", "Task a", "Create a", "Delete a", "Delete a"}
	if got := e.Calls(); !slices.Equal(got, want) {
		t.Fatalf("Calls = %q", got)
	}
	e.ResetCalls()
	if len(e.Calls()) != 0 {
		t.Fatal("ResetCalls")
	}
}

func TestExec(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	mustStart(t, e, "a", nil)
	if code, err := e.Exec(ctx, "a", engine.ExecSpec{Args: []string{"true"}}); code != 0 || err != nil {
		t.Fatalf("default Exec = %d, %v", code, err)
	}
	release := make(chan struct{})
	e.ExecFunc = func(id string, p engine.ExecSpec) (int, error) {
		if p.Args[0] == "hang" {
			<-release
		}
		_, _ = io.WriteString(p.Stdout, id+" ran "+strings.Join(p.Args, " "))
		return 2, nil
	}
	var out strings.Builder
	if code, err := e.Exec(ctx, "a", engine.ExecSpec{Args: []string{"cat", "/x"}, Stdout: &out}); code != 2 || err != nil {
		t.Fatalf("Exec = %d, %v", code, err)
	}
	if out.String() != "a ran cat /x" {
		t.Fatalf("stdout = %q", out.String())
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := e.Exec(tctx, "a", engine.ExecSpec{Args: []string{"hang"}, Stdout: io.Discard}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging Exec = %v", err)
	}
	close(release)
	e.Exit("a", 0)
	if _, err := e.Exec(ctx, "a", engine.ExecSpec{Args: []string{"true"}}); err == nil {
		t.Fatal("Exec in a stopped task succeeded")
	}
}

func TestSetTask(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	if err := e.Create(ctx, engine.ContainerSpec{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	e.SetTask("a", engine.Task{State: engine.TaskRunning})
	ts, _ := e.Task(ctx, "a")
	if ts.State != engine.TaskRunning || ts.PID == 0 {
		t.Fatalf("task = %+v", ts)
	}
	done := make(chan engine.Exit, 1)
	go func() {
		exit, _ := e.Wait(ctx, "a")
		done <- exit
	}()
	waitCall(t, e, "Wait a")
	e.SetTask("a", engine.Task{State: engine.TaskStopped, ExitCode: 9, ExitedAt: t0})
	if exit := <-done; exit.Code != 9 || !exit.ExitedAt.Equal(t0) {
		t.Fatalf("Wait = %+v", exit)
	}
	e.SetTask("a", engine.Task{})
	if ts, _ := e.Task(ctx, "a"); ts.State != engine.TaskNone {
		t.Fatalf("task = %+v", ts)
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	e := newEngine()
	ch, _ := e.Exits(ctx)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "c" + string(rune('a'+i))
			if err := e.Create(ctx, engine.ContainerSpec{ID: id}); err != nil {
				t.Error(err)
				return
			}
			if _, err := e.Start(ctx, id, ""); err != nil {
				t.Error(err)
				return
			}
			go func() { _ = e.Kill(ctx, id, syscall.SIGTERM) }()
			if _, err := e.Wait(ctx, id); err != nil {
				t.Error(err)
			}
			_ = e.Delete(ctx, id)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for range n {
		seen[recv(t, ch).ContainerID] = true
	}
	if len(seen) != n || len(e.Calls()) != 1+5*n {
		t.Fatalf("events for %d containers, %d calls", len(seen), len(e.Calls()))
	}
}

func TestPullAuthAndInvalidName(t *testing.T) {
	ctx := context.Background()
	e := New()
	e.AddRemote(engine.Image{Ref: "r.io/app:1", Digest: "sha256:a"})
	e.RequireAuth("r.io/app:1", "u", "p")
	if _, err := e.Pull(ctx, "r.io/app:1", engine.PullOptions{}); !errors.Is(err, engine.ErrUnauthorized) {
		t.Errorf("anonymous: %v; want ErrUnauthorized", err)
	}
	var asked []string
	auth := func(host string) (string, string) { asked = append(asked, host); return "u", "p" }
	if _, err := e.Pull(ctx, "r.io/app:1", engine.PullOptions{Auth: auth}); err != nil || len(asked) != 1 || asked[0] != "r.io" {
		t.Errorf("with credentials: %v, asked %q", err, asked)
	}
	if _, err := e.Pull(ctx, "Not A Ref", engine.PullOptions{}); !errors.Is(err, engine.ErrInvalidImageName) {
		t.Errorf("invalid name: %v; want ErrInvalidImageName", err)
	}
}
