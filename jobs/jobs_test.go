package jobs

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/status"
)

// jobOf parses one Job.
func jobOf(t *testing.T, spec string) *manifest.Job {
	t.Helper()
	return parseResolved(t, "job.yaml", `apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
`+spec+`
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: "busybox:1"}]
`).Jobs[0]
}

// parseResolved parses and resolves the manifest text of file name.
func parseResolved(t *testing.T, name, text string) *manifest.Set {
	t.Helper()
	set, err := manifest.Options{}.ParseUnresolved(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if set, err = manifest.Resolve(set); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestRunJobCompletions: completions 3, parallelism 2: two pods at once,
// the third once one has succeeded; the Job is Complete, recorded, and run
// again it makes nothing.
func TestRunJobCompletions(t *testing.T) {
	n := newFakeNode()
	c := New(n, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	j := jobOf(t, "  completions: 3\n  parallelism: 2")
	res := make(chan Result, 1)
	go func() { res <- c.RunJob(ctx, j, Options{UpOptions: run.UpOptions{Timeout: waitTimeout}}) }()
	for len(n.running()) < 2 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if r := len(n.running()); r != 2 {
		t.Errorf("%d pods running at once, want parallelism 2", r)
	}
	names := endRunning(ctx, t, n, 0, 0, 0)
	r := <-res
	if r.Err != nil || r.Status.Condition != plan.JobComplete || r.Status.Succeeded != 3 || len(r.Pods) != 3 {
		t.Fatalf("result %+v, want Complete with 3 pods", r)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "pi-") || len(name) != len("pi-")+5 {
			t.Errorf("pod name %q, want pi-<5>", name)
		}
	}
	if st, err := c.jobRecord(j); err != nil || st.Condition != plan.JobComplete {
		t.Errorf("record %+v, %v; want Complete", st, err)
	}
	again := c.RunJob(ctx, j, Options{UpOptions: run.UpOptions{Timeout: waitTimeout}})
	if again.Err != nil || again.Status.Condition != plan.JobComplete || len(again.Pods) != 0 || len(n.made) != 3 {
		t.Errorf("run again: %+v (pods made %v), want Complete and nothing made", again, n.made)
	}
}

// TestRunJobBackoffLimit: backoffLimit 0: the first failure fails the Job
// with the pod's failure; its record keeps it Failed, until Forget.
func TestRunJobBackoffLimit(t *testing.T) {
	n := newFakeNode()
	c := New(n, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	j := jobOf(t, "  backoffLimit: 0")
	res := make(chan Result, 1)
	go func() { res <- c.RunJob(ctx, j, Options{UpOptions: run.UpOptions{Timeout: waitTimeout}}) }()
	endRunning(ctx, t, n, 3)
	r := <-res
	if r.Err == nil || !strings.Contains(r.Err.Error(), "job default/pi failed: BackoffLimitExceeded") ||
		!strings.Contains(r.Err.Error(), `container "work" exited with code 3`) || r.Status.Failed != 1 {
		t.Fatalf("result %+v (err %v), want BackoffLimitExceeded naming the exit code", r, r.Err)
	}
	if st, err := c.jobRecord(j); err != nil || st.Condition != plan.JobFailed {
		t.Errorf("record %+v, %v; want Failed", st, err)
	}
	if err := c.Forget(j.Namespace, j.Name); err != nil {
		t.Fatal(err)
	}
	if st, err := c.jobRecord(j); err != nil || st.Condition != "" {
		t.Errorf("record after Forget: %+v, %v", st, err)
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
	n := newFakeNode()
	undoing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	n.undo = func() {
		once.Do(func() { close(undoing) })
		<-release
	}
	c := New(n, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	jctx, stop := context.WithCancel(ctx)
	res := make(chan Result, 1)
	go func() {
		res <- c.RunJob(jctx, jobOf(t, "  completions: 1"), Options{UpOptions: run.UpOptions{Timeout: waitTimeout}})
	}()
	for len(n.running()) != 1 {
		if ctx.Err() != nil {
			t.Fatalf("waiting for the Job's pod: %v", ctx.Err())
		}
		time.Sleep(5 * time.Millisecond)
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
	if left, _ := n.Pods(ctx); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

// TestJobPodNeverStartedKeepsItsStart: a Job's pod whose container never
// started (StartError, started at the zero of Unix time) is as old as its
// start time, not 56 years (activeDeadlineSeconds, pod ages).
func TestJobPodNeverStartedKeepsItsStart(t *testing.T) {
	start := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, StartTime: &metav1.Time{Time: start},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "work", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: status.ReasonStartError, StartedAt: metav1.NewTime(time.Unix(0, 0)), FinishedAt: metav1.NewTime(start.Add(time.Second))}}}}}}
	jp := jobPod(&run.PodInfo{UID: "u", Pod: p}, start.Add(time.Minute))
	if !jp.Created.Equal(start) || !jp.Finished.Equal(start.Add(time.Second)) {
		t.Errorf("created %v finished %v, want %v and a second later", jp.Created, jp.Finished, start)
	}
}

// TestRunJobAwaitTTL, as the daemon runs a Job: its pod is made Running
// (WaitRunning) and looked at every second until it ends; the Job is
// Complete and recorded, and once its ttlSecondsAfterFinished has passed
// its pod is taken down and its record forgotten before RunJob returns.
func TestRunJobAwaitTTL(t *testing.T) {
	n := newFakeNode()
	c := New(n, t.TempDir())
	fc := clocktesting.NewFakeClock(t0)
	c.clock = fc
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	j := jobOf(t, "  ttlSecondsAfterFinished: 30")
	res := make(chan Result, 1)
	go func() {
		res <- c.RunJob(ctx, j, Options{UpOptions: run.UpOptions{Wait: run.WaitRunning, Foreground: true, Timeout: waitTimeout}, AwaitTTL: true})
	}()
	tick(ctx, t, fc, func() bool { return len(n.running()) == 1 })
	p := n.running()[0]
	n.end(p.UID, 0)
	var st plan.JobStatus
	tick(ctx, t, fc, func() bool {
		var err error
		st, err = c.jobRecord(j)
		return err == nil && st.Condition == plan.JobComplete
	})
	tick(ctx, t, fc, func() bool { return !fc.Now().Before(st.End.Add(25 * time.Second)) })
	if len(res) != 0 || n.wentDown(p.Key()+"/"+p.UID) {
		t.Fatalf("before its TTL: RunJob returned (%d) or its pod went (%v)", len(res), n.wentDown(p.Key()+"/"+p.UID))
	}
	var r Result
	tick(ctx, t, fc, func() bool {
		select {
		case r = <-res:
			return true
		default:
			return false
		}
	})
	if r.Err != nil || r.Status.Condition != plan.JobComplete || len(r.Pods) != 2 || r.Pods[1].Action != run.Removed {
		t.Errorf("result %+v, want Complete, its pod made then removed", r)
	}
	if !n.wentDown(p.Key() + "/" + p.UID) {
		t.Errorf("pod %s not taken down", p.Key())
	}
	if st, err := c.jobRecord(j); err != nil || st.Condition != "" {
		t.Errorf("record past the TTL: %+v, %v; want none", st, err)
	}
}
