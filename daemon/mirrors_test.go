package daemon

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

func TestStaticSnapshot(t *testing.T) {
	pod := func(name, uid string) *manifest.Pod {
		return &manifest.Pod{UID: uid, Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}}
	}
	onNode := func(name, uid string, phase corev1.PodPhase) *run.PodInfo {
		return &run.PodInfo{Namespace: "default", Name: name, UID: uid,
			Pod: &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}}
	}
	wanted := []*manifest.Pod{pod("web-dev", "u2"), pod("new-dev", "u3"), pod("same-dev", "u4")}
	snap := staticSnapshot(wanted, []*run.PodInfo{
		onNode("web-dev", "u1", corev1.PodRunning), // the version replaced
		onNode("same-dev", "u4", corev1.PodRunning),
		onNode("gone-dev", "u5", corev1.PodRunning),
		{Namespace: "default", Name: "gone-dev", UID: "u6"}, // no record
	})
	var phases []string
	for i, s := range snap.Static {
		if s.Pod != wanted[i].Pod {
			t.Errorf("static %d is not the wanted pod", i)
		}
		phase := "-"
		if s.Status != nil {
			phase = string(s.Status.Phase)
		}
		phases = append(phases, s.Pod.Name+" "+phase)
	}
	if want := []string{"web-dev -", "new-dev -", "same-dev Running"}; !reflect.DeepEqual(phases, want) {
		t.Errorf("statics %q, want %q (a status only from the pod of the wanted UID)", phases, want)
	}
	if want := []string{"default/gone-dev"}; !reflect.DeepEqual(snap.Stopping, want) {
		t.Errorf("stopping %q, want %q", snap.Stopping, want)
	}
}
