package run

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
)

// jobOf parses one Job.
func jobOf(t *testing.T, spec string) *manifest.Job {
	t.Helper()
	set, err := manifest.Options{}.ParseUnresolved("job.yaml", []byte(`apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
`+spec+`
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: "busybox:1"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if set, err = manifest.Resolve(set); err != nil {
		t.Fatal(err)
	}
	return set.Jobs[0]
}

// exitWork ends running tasks of containers "work" as they come, the k-th
// with codes[k], until every code is used; it returns their pods' names.
func exitWork(ctx context.Context, t *testing.T, eng *fake.Engine, codes ...uint32) []string {
	t.Helper()
	var pods []string
	done := map[string]bool{}
	for len(pods) < len(codes) {
		ctrs, err := eng.List(ctx, map[string]string{labels.Container: "work"})
		if err != nil || ctx.Err() != nil {
			t.Fatalf("listing: %v %v", err, ctx.Err())
		}
		for _, c := range ctrs {
			if c.Task.State == engine.TaskRunning && !done[c.ID] && len(pods) < len(codes) {
				done[c.ID] = true
				eng.Exit(c.ID, codes[len(pods)])
				pods = append(pods, c.Labels[labels.PodName])
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return pods
}

// TestRunJobCompletions: completions 3, parallelism 2: two pods at once,
// the third once one has succeeded; the Job is Complete, recorded, and run
// again it makes nothing.
func TestRunJobCompletions(t *testing.T) {
	tp := newTwoProcesses(t)
	h := tp.host(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	j := jobOf(t, "  completions: 3\n  parallelism: 2")
	res := make(chan JobResult, 1)
	go func() { res <- h.RunJob(ctx, j, UpOptions{Timeout: waitTimeout}) }()
	running := func() int {
		ctrs, _ := tp.eng.List(ctx, map[string]string{labels.Container: "work"})
		n := 0
		for _, c := range ctrs {
			if c.Task.State == engine.TaskRunning {
				n++
			}
		}
		return n
	}
	for running() < 2 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if n := running(); n != 2 {
		t.Errorf("%d pods running at once, want parallelism 2", n)
	}
	names := exitWork(ctx, t, tp.eng, 0, 0, 0)
	r := <-res
	if r.Err != nil || r.Status.Condition != plan.JobComplete || r.Status.Succeeded != 3 || len(r.Pods) != 3 {
		t.Fatalf("result %+v, want Complete with 3 pods", r)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "pi-") || len(n) != len("pi-")+5 {
			t.Errorf("pod name %q, want pi-<5>", n)
		}
	}
	again := h.RunJob(ctx, j, UpOptions{Timeout: waitTimeout})
	if again.Err != nil || again.Status.Condition != plan.JobComplete || len(again.Pods) != 0 {
		t.Errorf("run again: %+v, want Complete and nothing made", again)
	}
}

// TestRunJobBackoffLimit: backoffLimit 0: the first failure fails the Job
// with the pod's failure; its record keeps it Failed.
func TestRunJobBackoffLimit(t *testing.T) {
	tp := newTwoProcesses(t)
	h := tp.host(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	j := jobOf(t, "  backoffLimit: 0")
	res := make(chan JobResult, 1)
	go func() { res <- h.RunJob(ctx, j, UpOptions{Timeout: waitTimeout}) }()
	exitWork(ctx, t, tp.eng, 3)
	r := <-res
	if r.Err == nil || !strings.Contains(r.Err.Error(), "job default/pi failed: BackoffLimitExceeded") ||
		!strings.Contains(r.Err.Error(), `container "work" exited with code 3`) || r.Status.Failed != 1 {
		t.Fatalf("result %+v (err %v), want BackoffLimitExceeded naming the exit code", r, r.Err)
	}
	if st, err := h.jobRecord(j); err != nil || st.Condition != plan.JobFailed {
		t.Errorf("record %+v, %v; want Failed", st, err)
	}
	if err := h.ForgetJob(j.Namespace, j.Name); err != nil {
		t.Fatal(err)
	}
	if st, err := h.jobRecord(j); err != nil || st.Condition != "" {
		t.Errorf("record after ForgetJob: %+v, %v", st, err)
	}
}

// cpuTime is the CPU time this process has used so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRunJobDrainReceivesOnly: once its context ends (a daemon stopped
// during a Job), RunJob waits for the pods it is making to be undone by
// receiving their results alone: it does not spin meanwhile (it did,
// around a select on its ended context: a core's worth of CPU for as long
// as an undo lasted).
func TestRunJobDrainReceivesOnly(t *testing.T) {
	tp := newTwoProcesses(t)
	h := tp.host(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	undoing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	tp.m.mu.Lock()
	tp.m.before = func(op string) error {
		if strings.HasPrefix(op, "netns.remove") {
			once.Do(func() { close(undoing) })
			<-release
		}
		return nil
	}
	tp.m.mu.Unlock()
	jctx, stop := context.WithCancel(ctx)
	res := make(chan JobResult, 1)
	go func() { res <- h.RunJob(jctx, jobOf(t, "  completions: 1"), UpOptions{Timeout: waitTimeout}) }()
	for running := false; !running; time.Sleep(5 * time.Millisecond) {
		ctrs, err := tp.eng.List(ctx, map[string]string{labels.Container: "work"})
		if err != nil || ctx.Err() != nil {
			t.Fatalf("waiting for the Job's pod: %v %v", err, ctx.Err())
		}
		running = len(ctrs) == 1 && ctrs[0].Task.State == engine.TaskRunning
	}
	stop()
	select {
	case <-undoing:
	case <-ctx.Done():
		t.Fatal("the pod being made was not undone")
	}
	before := cpuTime(t)
	const window = 300 * time.Millisecond
	time.Sleep(window)
	used := cpuTime(t) - before
	close(release)
	r := <-res
	if used > window/3 {
		t.Errorf("RunJob used %v of CPU in %v while it waited for an undo", used, window)
	}
	if len(r.Pods) != 1 || r.Err == nil {
		t.Errorf("result %+v, want the pod's outcome and the context's end", r)
	}
	if left := tp.m.left(); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}
