package jobs

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
	"github.com/podrun/podrun/run"
)

// cronJobOf parses one CronJob "tick" of schedule "* * * * *" in UTC.
func cronJobOf(t *testing.T, spec string) *manifest.CronJob {
	t.Helper()
	return parseResolved(t, "cronjob.yaml", `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  timeZone: UTC
`+spec+`
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: work, image: "busybox:1"}]
`).CronJobs[0]
}

// t0 is when the CronJobs of the tests are first seen: half a minute
// before their first scheduled time, 10:01.
var t0 = time.Date(2026, 11, 29, 10, 0, 30, 0, time.UTC)

// tick moves fc on by a second at a time, firing the timers due, until
// until holds.
func tick(ctx context.Context, t *testing.T, fc *clocktesting.FakeClock, until func() bool) {
	t.Helper()
	for !until() {
		if ctx.Err() != nil {
			t.Fatalf("at %v: %v", fc.Now(), ctx.Err())
		}
		fc.Step(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
}

// skippedMsg is what a CronJob "tick" reports of a Job it does not make
// under concurrencyPolicy Forbid.
const skippedMsg = "default/tick cronjob: scheduled Job skipped: concurrencyPolicy Forbid: a Job of it is still running"

// jobName is the name of the Job a CronJob "tick" makes for at.
func jobName(at time.Time) string { return fmt.Sprintf("tick-%d", at.Unix()/60) }

// TestRunCronJobConcurrency: at 10:02 the Job of 10:01 still runs: Allow
// makes the second beside it, Forbid skips it (and says so), Replace takes
// the first one's pod down and makes the second.
func TestRunCronJobConcurrency(t *testing.T) {
	at1, at2 := t0.Add(30*time.Second), t0.Add(90*time.Second)
	for _, tc := range []struct {
		policy  string
		running []string // the Jobs whose pods run after 10:02
		down    bool     // the pod of the Job of 10:01 was taken down
		skipped bool
	}{
		{"Allow", []string{jobName(at1), jobName(at2)}, false, false},
		{"Forbid", []string{jobName(at1)}, false, true},
		{"Replace", []string{jobName(at2)}, true, false},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			n := newFakeNode()
			c := New(n, t.TempDir())
			fc := clocktesting.NewFakeClock(t0)
			c.clock = fc
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			cctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.RunCronJob(cctx, cronJobOf(t, "  concurrencyPolicy: "+tc.policy), Options{UpOptions: run.UpOptions{Timeout: waitTimeout}}, t0, func(Result) {})
			}()
			tick(ctx, t, fc, func() bool { return len(n.running()) == 1 })
			first := n.running()[0]
			tick(ctx, t, fc, func() bool { return !fc.Now().Before(at2) })
			var jobs []string
			tick(ctx, t, fc, func() bool {
				jobs = nil
				for _, p := range n.running() {
					jobs = append(jobs, p.Pod.Labels[manifest.JobNameLabel])
				}
				return slices.Equal(jobs, tc.running) && n.wentDown(first.UID) == tc.down && n.said(skippedMsg) == tc.skipped
			})
			stop()
			<-done
			if left := n.running(); len(left) != 0 {
				t.Errorf("running once RunCronJob returned: %v", left)
			}
		})
	}
}

// TestRunCronJobHistory: with successfulJobsHistoryLimit 1, once the Job
// of 10:02 has completed, the Job of 10:01 goes: its pod and its record.
func TestRunCronJobHistory(t *testing.T) {
	n := newFakeNode()
	c := New(n, t.TempDir())
	fc := clocktesting.NewFakeClock(t0)
	c.clock = fc
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cctx, stop := context.WithCancel(ctx)
	results := make(chan Result, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.RunCronJob(cctx, cronJobOf(t, "  successfulJobsHistoryLimit: 1"), Options{UpOptions: run.UpOptions{Timeout: waitTimeout}}, t0, func(r Result) { results <- r })
	}()
	var pods []*run.PodInfo
	for _, at := range []time.Time{t0.Add(30 * time.Second), t0.Add(90 * time.Second)} {
		tick(ctx, t, fc, func() bool { return len(n.running()) == 1 })
		p := n.running()[0]
		if job, scheduled := p.Pod.Labels[manifest.JobNameLabel], p.Pod.Annotations[manifest.ScheduledAnnotation]; job != jobName(at) || scheduled != at.Format(time.RFC3339) {
			t.Errorf("pod %s of Job %s scheduled at %s, want Job %s of %s", p.Name, job, scheduled, jobName(at), at.Format(time.RFC3339))
		}
		n.end(p.UID, 0)
		if r := <-results; r.Err != nil || r.Status.Condition != plan.JobComplete || r.Job != "default/"+jobName(at) {
			t.Errorf("result %+v, want %s Complete", r, jobName(at))
		}
		pods = append(pods, p)
	}
	tick(ctx, t, fc, func() bool { return n.wentDown(pods[0].UID) })
	stop()
	<-done
	left, err := n.Pods(ctx)
	if err != nil || len(left) != 1 || left[0].UID != pods[1].UID {
		t.Errorf("pods left %v, %v; want %s's alone", left, err, pods[1].Name)
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil || len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "default_"+jobName(t0.Add(90*time.Second))+"_") {
		t.Errorf("records %v, %v; want the second Job's alone", entries, err)
	}
}
