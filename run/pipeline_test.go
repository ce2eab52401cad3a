package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/spec"
)

// These tests run Up, Down and Adopt end to end on fakes of every seam
// (seams_test.go): no root, no containerd, no CNI.

const pipelinePod = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  terminationGracePeriodSeconds: 3
  initContainers:
  - {name: setup, image: "busybox:1", command: ["true"]}
  - {name: log, image: "busybox:1", restartPolicy: Always}
  containers:
  - {name: app, image: "busybox:1", ports: [{containerPort: 80, hostPort: 8080}]}
`

// pipelineSteps are the steps of pipelinePod, in order.
var pipelineSteps = []string{"pod directory", "volumes", "images", "pod cgroup", "sandbox: netns",
	"sandbox: pause + network", "sandbox: files", "init/setup", "sidecar/log", "container/app", "record"}

// pipeline is a Host on fakes with pipelinePod parsed, and a bystander:
// another pod on the same machine that nothing may touch.
type pipeline struct {
	t   *testing.T
	m   *fakeMachine
	eng *fake.Engine
	cfg Config
	h   *Host
	pod *manifest.Pod
	clk *fakeClock
}

const bystanderUID = "0b0b0b0b-0000-4000-8000-000000000000"

// pipelineUID is pipelinePod's UID (its content's hash).
const pipelineUID = "ab2111fa-a277-545d-a824-4b554be0fd9a"

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	set, err := manifest.Options{}.ParseUnresolved("pod.yaml", []byte(pipelinePod))
	if err != nil {
		t.Fatal(err)
	}
	if set, err = manifest.Resolve(set); err != nil {
		t.Fatal(err)
	}
	p := &pipeline{t: t, m: newFakeMachine(), eng: fake.New(), pod: set.Pods[0], clk: newFakeClock()}
	p.eng.AddImage(engine.Image{Ref: testImage, Digest: "sha256:" + strings.Repeat("a", 64),
		Config: spec.Image{Ref: fake.Normalize(testImage), Cmd: []string{"sleep", "3600"}}})
	p.cfg = Config{Root: t.TempDir(), LogDir: t.TempDir(), PauseImage: testImage, Namespace: "podrun"}
	p.h = p.newHost()
	// The bystander's sandbox, network, namespace, cgroup and directory.
	bctx := context.Background()
	id := SandboxID(bystanderUID)
	if err := p.eng.Create(bctx, engine.ContainerSpec{ID: id, Labels: map[string]string{labels.PodUID: bystanderUID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.eng.Start(bctx, id, ""); err != nil {
		t.Fatal(err)
	}
	p.m.netns[sandbox.NetNSName(bystanderUID)] = true
	p.m.cgroups[p.h.podCgroup(bystanderUID)] = true
	p.m.attached[id] = true
	p.m.dirs[bystanderUID] = true
	p.m.log = nil
	// Init container "setup" exits 0 as soon as it starts.
	setup := ContainerID(p.pod.UID, "setup", 0)
	p.eng.OnCall = func(call string) {
		p.m.engineCall(call)
		if call == "Start "+setup {
			go p.eng.Exit(setup, 0)
		}
	}
	return p
}

// newHost is a Host on the pipeline's machine, as another podrun process
// would open it; its locks are its own (a dead process's locks are free).
func (p *pipeline) newHost() *Host { return p.hostWith(p.eng) }

// hostWith is newHost on engine e (a wrapper of the pipeline's).
func (p *pipeline) hostWith(e engine.Engine) *Host {
	d := p.m.deps(p.eng) // the engine's hook stays the pipeline's
	d.Engine, d.Clock = e, p.clk
	h := NewHost(p.cfg, d, nil, nil)
	p.t.Cleanup(func() { _ = h.Close() })
	return h
}

func (p *pipeline) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	p.t.Cleanup(cancel)
	return ctx
}

func (p *pipeline) up(ctx context.Context, o UpOptions) Result {
	p.t.Helper()
	if o.Wait == "" {
		o.Wait = WaitRunning
	}
	rs := p.h.Up(ctx, &manifest.Set{Pods: []*manifest.Pod{p.pod}}, o)
	return rs[0]
}

// containers lists the engine's containers of the pod under test.
func (p *pipeline) containers() []string {
	ctrs, err := p.eng.List(context.Background(), map[string]string{labels.PodUID: p.pod.UID})
	if err != nil {
		p.t.Fatal(err)
	}
	var ids []string
	for _, c := range ctrs {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids
}

// checkNothingLeft: the pod under test left nothing on the machine, and the
// bystander has everything it had and appears in no op.
func (p *pipeline) checkNothingLeft() {
	p.t.Helper()
	if ids := p.containers(); len(ids) > 0 {
		p.t.Errorf("containers left: %v", ids)
	}
	want := []string{"cgroup " + p.h.podCgroup(bystanderUID), "cni " + SandboxID(bystanderUID), "dir " + bystanderUID, "netns " + sandbox.NetNSName(bystanderUID)}
	if got := p.m.left(); !slices.Equal(got, want) {
		p.t.Errorf("left on the machine: %v, want only the bystander's %v", got, want)
	}
	for _, op := range p.m.Log() {
		if strings.Contains(op, bystanderUID) || strings.Contains(op, SandboxID(bystanderUID)) {
			p.t.Errorf("the bystander was touched: %s", op)
		}
	}
	if t, err := p.eng.Task(context.Background(), SandboxID(bystanderUID)); err != nil || t.State != engine.TaskRunning {
		p.t.Errorf("bystander's sandbox: %v %v", t.State, err)
	}
}

// made is what a creating op makes and the op that removes it.
type made struct {
	rank         int // creation order in the pipeline
	make, remove string
}

func (p *pipeline) resources() []made {
	uid := p.pod.UID
	return []made{
		{0, "disk.make " + uid, "disk.remove " + uid},
		{1, "cgroup.create " + p.h.podCgroup(uid), "cgroup.remove " + p.h.podCgroup(uid)},
		{2, "netns.create " + sandbox.NetNSName(uid), "netns.remove " + sandbox.NetNSName(uid)},
		{3, "engine.Create " + SandboxID(uid), "engine.Delete " + SandboxID(uid)},
		{3, "cni.add " + SandboxID(uid), "cni.del " + SandboxID(uid)},
		{4, "engine.Create " + ContainerID(uid, "setup", 0), "engine.Delete " + ContainerID(uid, "setup", 0)},
		{5, "engine.Create " + ContainerID(uid, "log", 0), "engine.Delete " + ContainerID(uid, "log", 0)},
		{6, "engine.Create " + ContainerID(uid, "app", 0), "engine.Delete " + ContainerID(uid, "app", 0)},
	}
}

// checkUndoneInReverse: removals come in the reverse order of creation (resources made together, the pause and
// its network, may go in either order).
func (p *pipeline) checkUndoneInReverse() {
	p.t.Helper()
	log := p.m.Log()
	lastRank := 1 << 30
	made := map[string]bool{}
	for _, op := range log {
		for _, r := range p.resources() {
			switch op {
			case r.make:
				made[r.make] = true
			case r.remove:
				if !made[r.make] {
					continue // removing what was never made is harmless (idempotent undo)
				}
				if r.rank > lastRank {
					p.t.Errorf("%q undone after something made later: log %v", r.make, log)
				}
				lastRank = min(lastRank, r.rank)
				delete(made, r.make)
			}
		}
	}
	// What was made and not removed (or whose make failed) is found by
	// checkNothingLeft.
}

// TestUpUndoesEveryStepOnFailure injects a failure into each step of the
// pipeline in turn: Up fails naming that step, everything it made is
// undone in reverse, and nothing else is touched.
func TestUpUndoesEveryStepOnFailure(t *testing.T) {
	uid := func(p *pipeline) string { return p.pod.UID }
	cases := []struct {
		step   string
		inject func(p *pipeline)
	}{
		{"pod directory", func(p *pipeline) { p.m.failOn("disk.create", 0) }},
		{"volumes", func(p *pipeline) { p.m.failOn("disk.setup", 0) }},
		{"images", func(p *pipeline) { p.eng.Fail("Image", errInjected) }},
		{"pod cgroup", func(p *pipeline) { p.m.failOn("cgroup.create", 0) }},
		{"sandbox: netns", func(p *pipeline) { p.m.failOn("netns.create", 0) }},
		{"sandbox: pause + network", func(p *pipeline) { p.eng.Fail("Start "+SandboxID(uid(p)), errInjected) }},
		{"sandbox: pause + network", func(p *pipeline) { p.m.failOn("cni.add", 0) }},
		{"sandbox: files", func(p *pipeline) { p.m.failOn("disk.write etc-hosts", 0) }},
		{"init/setup", func(p *pipeline) { p.eng.Fail("Create "+ContainerID(uid(p), "setup", 0), errInjected) }},
		{"sidecar/log", func(p *pipeline) { p.eng.Fail("Start "+ContainerID(uid(p), "log", 0), errInjected) }},
		{"container/app", func(p *pipeline) { p.eng.Fail("Create "+ContainerID(uid(p), "app", 0), errInjected) }},
		{"pod directory", func(p *pipeline) { p.m.failOn("disk.make", 0) }},
		{"record", func(p *pipeline) { p.m.failOn("disk.write pod.json", 1) }}, // after the network step's
	}
	covered := map[string]bool{}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%d-%s", i, tc.step), func(t *testing.T) {
			p := newPipeline(t)
			tc.inject(p)
			res := p.up(p.ctx(), UpOptions{})
			var serr *StepError
			if !errors.As(res.Err, &serr) || serr.Step != tc.step || !errors.Is(res.Err, errInjected) {
				t.Fatalf("Up = %v, want step %q to fail with the injected error", res.Err, tc.step)
			}
			if serr.UndoErr != nil {
				t.Errorf("undo: %v", serr.UndoErr)
			}
			p.checkUndoneInReverse()
			p.checkNothingLeft()
		})
		covered[tc.step] = true
	}
	for _, s := range pipelineSteps {
		if !covered[s] {
			t.Errorf("no failure injected into step %q", s)
		}
	}
}

// TestUpUndoesEveryStepOnCancel cancels Up's context as each step begins
// (at its first side effect): the pipeline stops and is undone on a fresh
// context, leaving nothing.
func TestUpUndoesEveryStepOnCancel(t *testing.T) {
	// The first side effect of each step.
	firsts := func(p *pipeline) map[string]string {
		uid := p.pod.UID
		return map[string]string{
			"pod directory":            "disk.create",
			"volumes":                  "disk.setup",
			"images":                   "engine.Image",
			"pod cgroup":               "cgroup.create",
			"sandbox: netns":           "netns.create",
			"sandbox: pause + network": "cni.add",
			"sandbox: files":           "engine.SetLabels " + SandboxID(uid),
			"init/setup":               "engine.Create " + ContainerID(uid, "setup", 0),
			"sidecar/log":              "engine.Create " + ContainerID(uid, "log", 0),
			"container/app":            "engine.Create " + ContainerID(uid, "app", 0),
		}
	}
	for _, step := range pipelineSteps {
		t.Run(step, func(t *testing.T) {
			p := newPipeline(t)
			ctx, cancel := context.WithCancel(p.ctx())
			at, ok := firsts(p)[step]
			if step == "record" {
				at, ok = "disk.write pod.json", true
			}
			if !ok {
				t.Fatalf("no first op for step %q", step)
			}
			n, want := 0, 0
			if step == "record" {
				want = 2 // after those of the directory and network steps
			}
			hit := func(op string) error {
				if strings.HasPrefix(op, at) {
					if n == want {
						cancel()
					}
					n++
				}
				return nil
			}
			p.m.before = hit
			prev := p.eng.OnCall
			p.eng.OnCall = func(call string) { _ = hit("engine." + call); prev(call) }
			res := p.up(ctx, UpOptions{})
			if step == "record" {
				// Cancelled during its last write: the pod is up, and says so.
				if res.Err != nil || len(p.containers()) != 4 {
					t.Fatalf("Up = %v with containers %v, want the pod up", res.Err, p.containers())
				}
				return
			}
			if !errors.Is(res.Err, context.Canceled) {
				t.Fatalf("Up = %v, want the cancellation at %q", res.Err, at)
			}
			p.checkUndoneInReverse()
			p.checkNothingLeft()
		})
	}
}

// TestUpThenDown brings the pod up and takes it down: the kubelet's kill
// order (apps, then sidecars in reverse, then the sandbox with its network,
// then the namespace, as the CRI's StopPodSandbox; then the removals) and
// nothing left.
func TestUpThenDown(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	res := p.up(ctx, UpOptions{})
	if res.Err != nil || res.Action != Created {
		t.Fatalf("Up = %+v", res)
	}
	if got := p.m.left(); !slices.Contains(got, "cni "+SandboxID(p.pod.UID)) || !slices.Contains(got, "netns "+sandbox.NetNSName(p.pod.UID)) {
		t.Fatalf("after up: %v", got)
	}
	pods, err := p.h.Pods(ctx)
	if i := slices.IndexFunc(pods, func(i *PodInfo) bool { return i.UID == p.pod.UID }); err != nil || i < 0 || pods[i].Pod == nil ||
		pods[i].Pod.Status.HostIP != fakeHostIP.String() {
		t.Fatalf("Pods = %v, %v: want the pod with hostIP %s (the machine's)", pods, err, fakeHostIP)
	}
	again := p.up(ctx, UpOptions{})
	if again.Err != nil || again.Action != Unchanged {
		t.Fatalf("second Up = %+v, want unchanged", again)
	}
	start := len(p.m.Log())
	down := p.h.Down(ctx, []Target{{Namespace: "default", Name: "web"}}, DownOptions{})
	if down[0].Err != nil || !down[0].Found {
		t.Fatalf("Down = %+v", down[0])
	}
	log := p.m.Log()[start:]
	// The containers stop (the app, then the sidecar), then the pause and
	// the network go together while the stopped containers are removed;
	// the namespace once both are gone, the pause's container, the cgroup
	// and last the pod directory.
	app, sidecar, pause := ContainerID(p.pod.UID, "app", 0), ContainerID(p.pod.UID, "log", 0), SandboxID(p.pod.UID)
	for _, order := range [][]string{
		{"engine.Kill " + app + " SIGTERM", "engine.Kill " + sidecar + " SIGTERM", "engine.Kill " + pause + " SIGKILL",
			"netns.remove " + sandbox.NetNSName(p.pod.UID), "engine.Delete " + pause, "cgroup.remove " + p.h.podCgroup(p.pod.UID), "disk.remove " + p.pod.UID},
		{"engine.Kill " + sidecar + " SIGTERM", "cni.del " + pause, "netns.remove " + sandbox.NetNSName(p.pod.UID)},
		{"engine.Kill " + sidecar + " SIGTERM", "engine.Delete " + app, "cgroup.remove " + p.h.podCgroup(p.pod.UID)},
	} {
		last := -1
		for _, op := range order {
			i := slices.Index(log, op)
			if i < 0 || i < last {
				t.Fatalf("%q missing or out of order in %v", op, log)
			}
			last = i
		}
	}
	p.checkNothingLeft()
}

// TestDownResumesAfterAFailedStep: a teardown step that fails leaves the
// pod's record in place, so that another Down (another podrun) finishes
// it; every step is idempotent.
func TestDownResumesAfterAFailedStep(t *testing.T) {
	uid := func(p *pipeline) string { return p.pod.UID }
	for _, tc := range []struct {
		name   string
		inject func(p *pipeline)
	}{
		{"delete", func(p *pipeline) { p.eng.Fail("Delete "+ContainerID(uid(p), "app", 0), errInjected) }},
		{"cni del", func(p *pipeline) { p.m.failOn("cni.del", 0) }},
		{"netns", func(p *pipeline) { p.m.failOn("netns.remove", 0) }},
		{"cgroup", func(p *pipeline) { p.m.failOn("cgroup.remove", 0) }},
		{"directory", func(p *pipeline) { p.m.failOn("disk.remove", 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t)
			ctx := p.ctx()
			if res := p.up(ctx, UpOptions{}); res.Err != nil {
				t.Fatal(res.Err)
			}
			tc.inject(p)
			target := []Target{{Namespace: "default", Name: "web"}}
			if r := p.h.Down(ctx, target, DownOptions{})[0]; !errors.Is(r.Err, errInjected) {
				t.Fatalf("Down = %+v, want the injected failure", r)
			}
			if r := p.newHost().Down(ctx, target, DownOptions{})[0]; r.Err != nil || !r.Found {
				t.Fatalf("second Down = %+v", r)
			}
			p.checkNothingLeft()
		})
	}
}

// TestAdopt: a pod left running by a podrun that exited is adopted by
// another: nothing is changed, and a container that exits is restarted
// into the same sandbox.
func TestAdopt(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{}); res.Err != nil {
		t.Fatal(res.Err)
	}
	h := p.newHost()
	start := len(p.m.Log())
	if err := h.Adopt(ctx, p.pod.UID, p.pod); err != nil {
		t.Fatal(err)
	}
	checkNoChange(t, "adoption", p.m.Log()[start:])
	if !h.Supervised(p.pod.UID) {
		t.Fatal("not supervised after Adopt")
	}
	app := ContainerID(p.pod.UID, "app", 0)
	p.eng.Exit(app, 1) // the first restart is at once
	next := ContainerID(p.pod.UID, "app", 1)
	deadline := time.Now().Add(waitTimeout)
	for {
		if t, err := p.eng.Task(ctx, next); err == nil && t.State == engine.TaskRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not restarted after adoption; log %v", next, p.m.Log()[start:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAdoptFailsWithoutChanges: at each thing adoption reads, a failure
// makes Adopt fail and leaves the pod as it was.
func TestAdoptFailsWithoutChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(p *pipeline)
	}{
		{"volumes", func(p *pipeline) { p.m.failOn("disk.locate", 0) }},
		{"image", func(p *pipeline) { p.eng.Fail("Image", errInjected) }},
		{"sandbox", func(p *pipeline) { p.eng.Fail("Task "+SandboxID(p.pod.UID), errInjected) }},
		{"sandbox gone", func(p *pipeline) {
			_ = p.eng.Kill(context.Background(), SandboxID(p.pod.UID), 9)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t)
			ctx := p.ctx()
			if res := p.up(ctx, UpOptions{}); res.Err != nil {
				t.Fatal(res.Err)
			}
			before := p.containers()
			tc.inject(p)
			h := p.newHost()
			if err := h.Adopt(ctx, p.pod.UID, p.pod); !errors.Is(err, ErrNotAdoptable) {
				t.Fatalf("Adopt = %v, want ErrNotAdoptable", err)
			}
			if h.Supervised(p.pod.UID) {
				t.Error("supervised after a failed adoption")
			}
			if got := p.containers(); !slices.Equal(got, before) {
				t.Errorf("containers %v, want %v", got, before)
			}
		})
	}
}

// crashable is the engine of a process that can die: once dead, its calls
// fail, and dying waits for the calls in flight (which containerd would
// finish after a kill -9 all the same).
type crashable struct {
	engine.Engine
	mu       sync.Mutex
	dead     bool
	inflight sync.WaitGroup
}

var errDead = errors.New("the process is dead")

func (c *crashable) enter() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errDead
	}
	c.inflight.Add(1)
	return nil
}

func (c *crashable) die() {
	c.mu.Lock()
	c.dead = true
	c.mu.Unlock()
	c.inflight.Wait()
}

func (c *crashable) Create(ctx context.Context, s engine.ContainerSpec) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.inflight.Done()
	return c.Engine.Create(ctx, s)
}

func (c *crashable) Start(ctx context.Context, id, logPath string) (uint32, error) {
	if err := c.enter(); err != nil {
		return 0, err
	}
	defer c.inflight.Done()
	return c.Engine.Start(ctx, id, logPath)
}

func (c *crashable) SetLabels(ctx context.Context, id string, l map[string]string) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.inflight.Done()
	return c.Engine.SetLabels(ctx, id, l)
}

func (c *crashable) Delete(ctx context.Context, id string) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.inflight.Done()
	return c.Engine.Delete(ctx, id)
}

func (c *crashable) Kill(ctx context.Context, id string, sig syscall.Signal) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.inflight.Done()
	return c.Engine.Kill(ctx, id, sig)
}

// crashingHost is a Host of the pipeline whose process can die (its engine).
func (p *pipeline) crashingHost() (*Host, *crashable) {
	cr := &crashable{Engine: p.eng}
	return p.hostWith(cr), cr
}

// crashAt makes a process die at the n-th op (from 0) that starts with
// prefix: its engine fails from then on, and that op never returns while
// the test looks (as a process killed there would never go on); it fails
// once released. It returns a channel closed when the op is reached, and
// the release.
func (p *pipeline) crashAt(prefix string, n int, cr *crashable) (<-chan struct{}, func()) {
	reached, release := make(chan struct{}), make(chan struct{})
	seen := 0
	var once sync.Once
	p.m.before = func(op string) error {
		if !strings.HasPrefix(op, prefix) {
			return nil
		}
		if seen++; seen-1 != n {
			return nil
		}
		cr.die()
		once.Do(func() { close(reached) })
		<-release
		return errDead
	}
	var released sync.Once
	return reached, func() { released.Do(func() { close(release) }) }
}

// TestCrashDuringUpThenDown: a podrun killed at any step of up (no undo
// runs) leaves what another podrun's down removes entirely.
func TestCrashDuringUpThenDown(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		n      int
	}{
		// The pod directory is made with its record (disk.make), then its
		// tmpfs mounted (disk.create): a crash between leaves what down finds.
		{"disk.make", 0}, {"disk.create", 0}, {"disk.setup", 0}, {"cgroup.create", 0}, {"netns.create", 0},
		{"disk.write cni.conflist", 0}, {"cni.add", 0}, {"disk.write pod.json", 0}, // right after CNI ADD
		{"disk.write etc-hosts", 0}, {"disk.write hostname", 0},
		{"disk.write " + ContainerID(pipelineUID, "setup", 0), 0},
		{"disk.write " + ContainerID(pipelineUID, "log", 0), 0},
		{"disk.write " + ContainerID(pipelineUID, "app", 0), 0},
		{"disk.write pod.json", 1}, // record
	} {
		t.Run(fmt.Sprintf("%s#%d", tc.prefix, tc.n), func(t *testing.T) {
			p := newPipeline(t)
			if p.pod.UID != pipelineUID {
				t.Fatalf("the pod's UID is %s: update pipelineUID", p.pod.UID)
			}
			h, cr := p.crashingHost()
			reached, release := p.crashAt(tc.prefix, tc.n, cr)
			upDone := make(chan struct{})
			go func() {
				defer close(upDone)
				h.Up(context.Background(), &manifest.Set{Pods: []*manifest.Pod{p.pod}}, UpOptions{Wait: WaitRunning})
			}()
			t.Cleanup(func() { release(); <-upDone })
			select {
			case <-reached:
			case <-time.After(waitTimeout):
				t.Fatalf("up never reached %s", tc.prefix)
			}
			r := p.newHost().Down(p.ctx(), []Target{{Namespace: "default", Name: "web"}}, DownOptions{})[0]
			if r.Err != nil {
				t.Fatalf("down after the crash: %v", r.Err)
			}
			p.checkNothingLeft()
		})
	}
}

// TestCrashDuringDownThenDown: a podrun killed at any step of down leaves
// what another podrun's down finishes, with the pod's own record.
func TestCrashDuringDownThenDown(t *testing.T) {
	for _, prefix := range []string{"cni.del", "netns.remove", "cgroup.remove", "disk.remove"} {
		t.Run(prefix, func(t *testing.T) {
			p := newPipeline(t)
			ctx := p.ctx()
			if res := p.up(ctx, UpOptions{}); res.Err != nil {
				t.Fatal(res.Err)
			}
			h, cr := p.crashingHost()
			reached, release := p.crashAt(prefix, 0, cr)
			downDone := make(chan struct{})
			go func() {
				defer close(downDone)
				h.Down(context.Background(), []Target{{Namespace: "default", Name: "web"}}, DownOptions{})
			}()
			t.Cleanup(func() { release(); <-downDone })
			select {
			case <-reached:
			case <-time.After(waitTimeout):
				t.Fatalf("down never reached %s", prefix)
			}
			p.m.mu.Lock()
			p.m.before = nil // the other process runs normally
			p.m.mu.Unlock()
			r := p.newHost().Down(ctx, []Target{{Namespace: "default", Name: "web"}}, DownOptions{})[0]
			if r.Err != nil {
				t.Fatalf("down after the crash: %+v", r)
			}
			p.checkNothingLeft()
		})
	}
}

// TestDownIsNeverCancelledHalfWay: a cancellation that comes while down
// tears the pod down (SIGTERM to the daemon, Ctrl-C) does not stop it: every
// step still runs, and nothing is left.
func TestDownIsNeverCancelledHalfWay(t *testing.T) {
	for _, at := range []string{"engine.Kill", "cni.del", "netns.remove", "engine.Delete", "cgroup.remove"} {
		t.Run(at, func(t *testing.T) {
			p := newPipeline(t)
			if res := p.up(p.ctx(), UpOptions{}); res.Err != nil {
				t.Fatal(res.Err)
			}
			ctx, cancel := context.WithCancel(p.ctx())
			p.m.before = func(op string) error {
				if strings.HasPrefix(op, at) {
					cancel()
				}
				return nil
			}
			prev := p.eng.OnCall
			p.eng.OnCall = func(call string) {
				if strings.HasPrefix("engine."+call, at) {
					cancel()
				}
				prev(call)
			}
			r := p.h.Down(ctx, []Target{{Namespace: "default", Name: "web"}}, DownOptions{})[0]
			if r.Err != nil || !r.Found {
				t.Fatalf("down = %+v, want it finished although cancelled at %s", r, at)
			}
			p.checkNothingLeft()
		})
	}
}

// TestAdoptCancelledTouchesNothing: a cancellation at each thing adoption
// reads makes Adopt fail, leaving the pod as it was and unsupervised.
func TestAdoptCancelledTouchesNothing(t *testing.T) {
	for _, at := range []string{"disk.locate", "engine.Image", "engine.Task " + SandboxID(pipelineUID)} {
		t.Run(at, func(t *testing.T) {
			p := newPipeline(t)
			if res := p.up(p.ctx(), UpOptions{}); res.Err != nil {
				t.Fatal(res.Err)
			}
			before := p.containers()
			h := p.newHost()
			ctx, cancel := context.WithCancel(p.ctx())
			hit := func(op string) {
				if strings.HasPrefix(op, at) {
					cancel()
				}
			}
			p.m.before = func(op string) error { hit(op); return nil }
			prev := p.eng.OnCall
			p.eng.OnCall = func(call string) { hit("engine." + call); prev(call) }
			start := len(p.m.Log())
			if err := h.Adopt(ctx, p.pod.UID, p.pod); err == nil {
				t.Fatalf("Adopt succeeded although cancelled at %s", at)
			}
			if h.Supervised(p.pod.UID) {
				t.Error("supervised after a cancelled adoption")
			}
			if got := p.containers(); !slices.Equal(got, before) {
				t.Errorf("containers %v, want %v", got, before)
			}
			checkNoChange(t, "the cancelled adoption", p.m.Log()[start:])
		})
	}
}

// checkNoChange fails t for every op of log that changes the machine.
func checkNoChange(t *testing.T, who string, log []string) {
	t.Helper()
	for _, op := range log {
		for _, verb := range []string{".create", ".remove", ".add", ".del", ".write", "engine.Create", "engine.Start", "engine.Kill", "engine.Delete"} {
			if strings.Contains(op, verb) {
				t.Errorf("%s changed something: %s", who, op)
			}
		}
	}
}

// TestDownRemovesSnapshotsOfCutOffCreates: a podrun killed between a
// container's snapshot and the container (a restart's create) leaves a
// snapshot no listing finds by label; `down` finds it by key and removes it.
func TestDownRemovesSnapshotsOfCutOffCreates(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{}); res.Err != nil {
		t.Fatal(res.Err)
	}
	p.eng.CutOffCreate(ContainerID(p.pod.UID, "app", 1))
	other := ContainerID("00000000-1111-2222-3333-444444444444", "app", 0)
	p.eng.CutOffCreate(other) // another pod's: left alone
	if r := p.newHost().Down(ctx, []Target{{Namespace: "default", Name: "web"}}, DownOptions{})[0]; r.Err != nil || !r.Found {
		t.Fatalf("Down = %+v", r)
	}
	if got := p.eng.Orphans(); !slices.Equal(got, []string{other}) {
		t.Errorf("snapshots left %v, want only the other pod's %s", got, other)
	}
	p.checkNothingLeft()
}

// TestSupplementalGroupsPolicy: under Merge (the default) the groups the
// image's /etc/group gives the user join the container's, and its status
// reports them; under Strict they do not.
func TestSupplementalGroupsPolicy(t *testing.T) {
	for _, policy := range []corev1.SupplementalGroupsPolicy{"", corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict} {
		t.Run(string(policy), func(t *testing.T) {
			p := newPipeline(t)
			p.eng.ImageGroups = map[string][]uint32{fake.Normalize(testImage): {4242}}
			if policy != "" {
				p.pod.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: &policy}
			}
			if res := p.up(p.ctx(), UpOptions{}); res.Err != nil {
				t.Fatal(res.Err)
			}
			ctrs, err := p.eng.List(context.Background(), map[string]string{labels.PodUID: p.pod.UID, labels.Container: "app"})
			if err != nil || len(ctrs) != 1 {
				t.Fatalf("List = %v, %v", ctrs, err)
			}
			got := ctrs[0].Labels[labels.User]
			want := "0:0:0"
			if policy != corev1.SupplementalGroupsPolicyStrict {
				want = "0:0:0,4242"
			}
			if got != want {
				t.Errorf("user label = %q, want %q", got, want)
			}
		})
	}
}

// startLog records the order of the engine's task starts.
type startLog struct {
	engine.Engine
	mu      sync.Mutex
	started []string
}

func (s *startLog) Start(ctx context.Context, id, logPath string) (uint32, error) {
	s.mu.Lock()
	s.started = append(s.started, id)
	s.mu.Unlock()
	return s.Engine.Start(ctx, id, logPath)
}

func (s *startLog) order() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.started)
}

// TestAppContainersStartInOrder: a pod's app containers start one after
// another in spec order, each once the start of the one before has
// returned, its postStart hook included, as the kubelet's SyncPod starts
// them.
func TestAppContainersStartInOrder(t *testing.T) {
	p := newPipeline(t)
	p.pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}
	for _, name := range []string{"second", "third"} {
		c := *p.pod.Spec.Containers[0].DeepCopy()
		c.Name, c.Ports, c.Lifecycle = name, nil, nil
		p.pod.Spec.Containers = append(p.pod.Spec.Containers, c)
	}
	ids := []string{ContainerID(p.pod.UID, "app", 0), ContainerID(p.pod.UID, "second", 0), ContainerID(p.pod.UID, "third", 0)}
	hooked, release := make(chan struct{}), make(chan struct{})
	p.eng.ExecFunc = func(id string, _ engine.ExecSpec) (int, error) {
		if id == ids[0] {
			close(hooked)
			<-release
		}
		return 0, nil
	}
	log := &startLog{Engine: p.eng}
	p.h = p.hostWith(log)
	res := make(chan Result, 1)
	go func() { res <- p.up(p.ctx(), UpOptions{}) }()
	select {
	case <-hooked:
	case <-time.After(waitTimeout):
		t.Fatal("the postStart hook of app never ran")
	}
	time.Sleep(200 * time.Millisecond) // time for a start that does not wait
	apps := func(started []string) []string {
		return slices.DeleteFunc(started, func(id string) bool { return !slices.Contains(ids, id) })
	}
	if got := apps(log.order()); !slices.Equal(got, ids[:1]) {
		t.Errorf("tasks started while the postStart hook of app ran: %v, want only %v", got, ids[:1])
	}
	close(release)
	if r := <-res; r.Err != nil {
		t.Fatalf("Up: %v", r.Err)
	}
	if got := apps(log.order()); !slices.Equal(got, ids) {
		t.Errorf("tasks started in order %v, want %v", got, ids)
	}
}

// TestUpPreparesAppsDuringNetwork: a pod with no init containers and no
// pause has its app containers created while CNI ADD runs (and started,
// not created again, after it); when ADD fails they are undone with the
// rest.
func TestUpPreparesAppsDuringNetwork(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("ADD fails %v", fail), func(t *testing.T) {
			p := newPipeline(t)
			p.cfg.PauseImage = ""
			p.h = p.newHost()
			p.pod.Spec.InitContainers = nil
			app := ContainerID(p.pod.UID, "app", 0)
			p.m.before = func(op string) error {
				if !strings.HasPrefix(op, "cni.add") {
					return nil
				}
				// ADD ends only once the app container was created.
				for !slices.Contains(p.m.Log(), "engine.Create "+app) {
					time.Sleep(time.Millisecond)
				}
				if fail {
					return errInjected
				}
				return nil
			}
			res := p.up(p.ctx(), UpOptions{})
			log := p.m.Log()
			if n := slices.IndexFunc(log, func(op string) bool { return op == "engine.Create "+app }); n < 0 || slices.Index(log, "engine.Start "+app) >= 0 && slices.Index(log, "engine.Start "+app) < n {
				t.Fatalf("the app container was not created before its start: %v", log)
			}
			if !fail {
				if res.Err != nil {
					t.Fatalf("Up = %v", res.Err)
				}
				if creates := slices.DeleteFunc(slices.Clone(log), func(op string) bool { return op != "engine.Create "+app }); len(creates) != 1 || !slices.Contains(log, "engine.Start "+app) {
					t.Errorf("app created %d times, started %v: %v", len(creates), slices.Contains(log, "engine.Start "+app), log)
				}
				return
			}
			var serr *StepError
			if !errors.As(res.Err, &serr) || serr.Step != "sandbox: namespaces + network" || !errors.Is(res.Err, errInjected) {
				t.Fatalf("Up = %v, want the network step to fail", res.Err)
			}
			if serr.UndoErr != nil {
				t.Errorf("undo: %v", serr.UndoErr)
			}
			p.checkNothingLeft()
		})
	}
}
