package run

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
)

const noSuchCommand = `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown`

// TestStartErrorRestartsWithBackOff: with retryStarts (the daemon), a
// container made but not started is recorded as containerd's CRI records
// it (exit code 128, reason StartError, the error as its message, started
// at the zero of Unix time) and restarted as a crashed one: at once, then
// after 10 s, 20 s; each failed attempt waits in RunContainerError with the
// error, shown CrashLoopBackOff once 10 s of its back-off have passed (the
// kubelet's next sync of a pod whose sync failed). The step waiting for the
// container does not fail.
func TestStartErrorRestartsWithBackOff(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	hs.r.retryStarts = true
	for range 3 {
		hs.eng.Fail("Start", &engine.StartError{Err: errors.New(noSuchCommand)})
	}
	hs.startApp("app")

	failed := func(k int) map[string]string {
		t.Helper()
		id := hs.id("app", k)
		hs.eventually("attempt "+id+" recorded failed", func() bool {
			s, ok := hs.eng.Spec(id)
			return ok && s.Labels[labels.Waiting] != ""
		})
		l := hs.labels(id)
		if l[labels.ExitCode] != "128" || l[labels.Reason] != status.ReasonStartError || l[labels.Message] != noSuchCommand ||
			l[labels.StartedAt] != "1970-01-01T00:00:00Z" || l[labels.FinishedAt] == "" {
			t.Errorf("attempt %d: labels %v, want exit 128, StartError, the message, started at 1970", k, l)
		}
		return l
	}
	// Attempt 0 fails, restarted at once; attempt 1 fails, 10 s.
	if l := failed(0); l[labels.Waiting] != status.ReasonRunContainerError || l[labels.WaitingMessage] != noSuchCommand {
		t.Errorf("attempt 0: waiting %q %q, want RunContainerError and the error", l[labels.Waiting], l[labels.WaitingMessage])
	}
	failed(1)
	if asked := hs.clk.waitAsked(t, 1); asked[0] != 10*time.Second {
		t.Fatalf("first back-off %v, want 10s", asked)
	}
	hs.clk.Advance(10 * time.Second)
	// Attempt 2 fails: 20 s, shown RunContainerError for the first 10.
	l := failed(2)
	asked := hs.clk.waitAsked(t, 2)
	if asked[1] != 10*time.Second || l[labels.Waiting] != status.ReasonRunContainerError || l[labels.Backoff] != "20s" {
		t.Errorf("attempt 2: asked %v, waiting %q back-off %q; want 10s first, RunContainerError, 20s", asked, l[labels.Waiting], l[labels.Backoff])
	}
	hs.clk.Advance(10 * time.Second)
	hs.clk.waitAsked(t, 3)
	if l := hs.labels(hs.id("app", 2)); l[labels.Waiting] != "CrashLoopBackOff" || l[labels.WaitingMessage] != "" {
		t.Errorf("attempt 2 after 10 s: waiting %q %q, want CrashLoopBackOff", l[labels.Waiting], l[labels.WaitingMessage])
	}
	hs.clk.Advance(10 * time.Second)
	hs.waitRunning("app", 3)
	if st := hs.loop("app").State(); st.Restarts != 3 || st.StartErr != nil {
		t.Errorf("state %+v, want 3 restarts, running", st)
	}
}

// TestStartErrorFailsTheStepWithoutRetry: without retryStarts (`up`), a
// container that cannot start fails the step that waits for it, with the
// error.
func TestStartErrorFailsTheStepWithoutRetry(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	for range 2 {
		hs.eng.Fail("Start", &engine.StartError{Err: errors.New(noSuchCommand)})
	}
	err := hs.r.startApps([]*corev1.Container{hs.container("app")})(hs.ctx)
	if serr := (*engine.StartError)(nil); !errors.As(err, &serr) {
		t.Fatalf("startApps = %v, want the StartError", err)
	}
}

// TestAdoptedStartErrorKeepsItsBackOff: a supervisor that takes over a pod
// (a restarted daemon) whose last attempt could not start keeps that
// container's back-off: an attempt that never ran (started at the zero of
// Unix time) did not run for decades, which would start the schedule over.
func TestAdoptedStartErrorKeepsItsBackOff(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	id := hs.id("app", 2)
	l := hs.r.labels("app", labels.KindApp, 2, "")
	for k, v := range map[string]string{
		labels.ExitCode: "128", labels.Reason: status.ReasonStartError, labels.Message: noSuchCommand,
		labels.StartedAt: "1970-01-01T00:00:00Z", labels.FinishedAt: hs.clk.Now().UTC().Format(time.RFC3339Nano),
	} {
		l[k] = v
	}
	if err := hs.eng.Create(hs.ctx, engine.ContainerSpec{ID: id, Labels: l}); err != nil {
		t.Fatal(err)
	}
	attempts, err := hs.eng.List(hs.ctx, map[string]string{labels.PodUID: testUID, labels.Container: "app"})
	if err != nil || len(attempts) != 1 {
		t.Fatalf("attempts %v, %v", attempts, err)
	}
	hs.r.w.Adopt(hs.container("app"), supervisor.RoleApp, attempts)
	if asked := hs.clk.waitAsked(t, 1); asked[0] != 20*time.Second {
		t.Errorf("back-off after adoption %v, want 20s (the third attempt's)", asked)
	}
}

// TestInitStartErrorSaysWhy: with retryStarts, an init container that
// cannot start fails its pod under restartPolicy Never saying the start's
// error, and under Always waits on its restarts until the step gives up,
// then says that error too (not just the deadline).
func TestInitStartErrorSaysWhy(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyAlways} {
		t.Run(string(policy), func(t *testing.T) {
			ps := appSpec(policy, corev1.Container{Name: "app"})
			ps.InitContainers = []corev1.Container{{Name: "setup", Image: testImage}}
			hs := newHarness(t, ps)
			hs.r.retryStarts = true
			for range 3 {
				hs.eng.Fail("Start", &engine.StartError{Err: errors.New(noSuchCommand)})
			}
			ctx, cancel := context.WithCancel(hs.ctx)
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- hs.r.runInit(&hs.r.pod.Spec.InitContainers[0])(ctx) }()
			if policy == corev1.RestartPolicyAlways {
				hs.clk.waitAsked(t, 1) // in back-off after two failed starts: still waiting
				select {
				case err := <-errc:
					t.Fatalf("runInit returned during the back-off: %v", err)
				default:
				}
				cancel()
			}
			var err error
			select {
			case err = <-errc:
			case <-time.After(waitTimeout):
				t.Fatal("runInit did not return")
			}
			if err == nil || !strings.Contains(err.Error(), `init container "setup" could not start: `+noSuchCommand) {
				t.Errorf("runInit = %v, want the start's error", err)
			}
		})
	}
}
