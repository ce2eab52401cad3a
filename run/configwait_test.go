package run

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/spec"
)

// TestConfigErrorKeepsPodPending: a container that cannot be created from
// its configuration (runAsNonRoot, an image that runs as root) undoes the
// pod's steps; with RecordConfigErrors (the daemon) the pod is then listed
// Pending with that container waiting in CreateContainerConfigError and the
// kubelet's message, as the kubelet shows it; without, nothing is left.
func TestConfigErrorKeepsPodPending(t *testing.T) {
	for _, record := range []bool{true, false} {
		p := newPipeline(t)
		yes := true
		p.pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: &yes}
		res := p.up(p.ctx(), UpOptions{RecordConfigErrors: record})
		var cerr *spec.ConfigError
		if !errors.As(res.Err, &cerr) || cerr.Container != "app" {
			t.Fatalf("record %v: Up = %v, want a ConfigError of container app", record, res.Err)
		}
		if ids := p.containers(); len(ids) > 0 {
			t.Errorf("record %v: containers left: %v", record, ids)
		}
		all, err := p.h.Pods(p.ctx())
		if err != nil {
			t.Fatal(err)
		}
		var pods []*PodInfo
		for _, pi := range all {
			if pi.UID == p.pod.UID {
				pods = append(pods, pi)
			}
		}
		if !record {
			if len(pods) != 0 {
				t.Errorf("without RecordConfigErrors: pods listed %v, want none", pods)
			}
			continue
		}
		if res.Phase != corev1.PodPending || len(pods) != 1 || pods[0].Pod == nil {
			t.Fatalf("phase %s, pods %v: want Pending and the pod listed", res.Phase, pods)
		}
		st := pods[0].Pod.Status
		want := `container has runAsNonRoot and image will run as root (pod: "web_default(` + p.pod.UID + `)", container: app)`
		if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != spec.ReasonCreateContainerConfigError || w.Message != want {
			t.Errorf("container app: state %+v, want waiting %s %q", st.ContainerStatuses[0].State, spec.ReasonCreateContainerConfigError, want)
		}
		if st.Phase != corev1.PodPending {
			t.Errorf("phase %s, want Pending", st.Phase)
		}
	}
}
