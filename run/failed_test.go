package run

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestInitFailureUnderNeverKeptFailed: an init container failing under
// restartPolicy Never undoes the pod's steps; with RecordFailures (the
// daemon) the pod stays listed Failed with its init container's Error, and
// the next sync of the same manifest starts nothing again, as the kubelet
// keeps a failed static pod until its file changes.
func TestInitFailureUnderNeverKeptFailed(t *testing.T) {
	p := newPipeline(t)
	p.pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	setup := ContainerID(p.pod.UID, "setup", 0)
	p.eng.OnCall = func(call string) {
		p.m.engineCall(call)
		if call == "Start "+setup {
			go p.eng.Exit(setup, 1)
		}
	}
	o := UpOptions{RecordFailures: true, Foreground: true}
	res := p.up(p.ctx(), o)
	if !errors.Is(res.Err, ErrKeptFailed) || res.Phase != corev1.PodFailed {
		t.Fatalf("Up = %s, %v; want Failed with the init container's failure, kept", res.Phase, res.Err)
	}
	if ids := p.containers(); len(ids) > 0 {
		t.Errorf("containers left: %v", ids)
	}
	check := func(when string) {
		t.Helper()
		pods, err := p.h.Pods(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, pi := range pods {
			if pi.UID != p.pod.UID {
				continue
			}
			st := pi.Pod.Status
			term := st.InitContainerStatuses[0].State.Terminated
			if st.Phase != corev1.PodFailed || term == nil || term.ExitCode != 1 || term.Reason != "Error" {
				t.Errorf("%s: phase %s, init setup %+v; want Failed, terminated Error 1", when, st.Phase, st.InitContainerStatuses[0].State)
			}
			for _, c := range st.Conditions {
				if c.Type == corev1.PodInitialized && (c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "setup")) {
					t.Errorf("%s: Initialized %+v, want False naming setup", when, c)
				}
			}
			return
		}
		t.Errorf("%s: the pod is not listed", when)
	}
	check("after the failure")
	calls := len(p.eng.Calls())
	res = p.up(p.ctx(), o)
	if res.Err != nil || res.Action != Unchanged || res.Phase != corev1.PodFailed {
		t.Errorf("the same manifest again: %s %s %v; want unchanged, Failed", res.Action, res.Phase, res.Err)
	}
	for _, c := range p.eng.Calls()[calls:] {
		if strings.HasPrefix(c, "Create ") || strings.HasPrefix(c, "Start ") {
			t.Errorf("the same manifest again: %s, want nothing started", c)
		}
	}
	check("after the same manifest again")
}
