package kubepods

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podrun/podrun/admission"
)

var t0 = time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

// running is the status the node computes of a running pod, its times
// with nanoseconds as the node has them.
func running(ready corev1.ConditionStatus) *corev1.PodStatus {
	start := metav1.NewTime(t0.Add(2*time.Second + 123*time.Millisecond))
	return &corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.5", HostIP: "192.0.2.2", StartTime: &start,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(2*time.Second + 5)},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: at(3*time.Second + 7)},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: ready == corev1.ConditionTrue, Image: "podrun.test/api-web:1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}}}}
}

func boundPod(uid string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + uid, Namespace: "default", UID: types.UID(uid)},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(0)}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// TestDecide: what the node writes of each pod bound to it.
func TestDecide(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Minute))
	written := Merge(boundPod("a", nil).Status, *running(corev1.ConditionTrue))
	for _, tc := range []struct {
		name     string
		api      *corev1.Pod
		node     map[types.UID]*corev1.PodStatus
		sent     *corev1.PodStatus
		want     string
		rejected bool
	}{
		{"running here, Pending in the API: written", boundPod("a", nil), map[types.UID]*corev1.PodStatus{"a": running(corev1.ConditionTrue)}, nil, "status a Running", false},
		{"as the API has it (to the second): nothing", boundPod("a", func(p *corev1.Pod) { p.Status = written }),
			map[types.UID]*corev1.PodStatus{"a": running(corev1.ConditionTrue)}, nil, "", false},
		{"sent, the watch not back yet: nothing", boundPod("a", nil), map[types.UID]*corev1.PodStatus{"a": running(corev1.ConditionTrue)}, &written, "", false},
		{"sent, then changed: written", boundPod("a", nil), map[types.UID]*corev1.PodStatus{"a": running(corev1.ConditionFalse)}, &written, "status a Running", false},
		{"not on the node yet: nothing", boundPod("a", nil), nil, nil, "", false},
		{"on the node, no status known: nothing", boundPod("a", nil), map[types.UID]*corev1.PodStatus{"a": nil}, nil, "", false},
		{"deleted, still on the node: its status", boundPod("a", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
			map[types.UID]*corev1.PodStatus{"a": running(corev1.ConditionFalse)}, nil, "status a Running", false},
		{"deleted, nothing left on the node: deleted", boundPod("a", func(p *corev1.Pod) { p.DeletionTimestamp = &now }), nil, nil, "delete a", false},
		{"another pod's uid on the node: deleted", boundPod("a", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
			map[types.UID]*corev1.PodStatus{"b": running(corev1.ConditionTrue)}, nil, "delete a", false},
		{"terminal in the API: never back to Running", boundPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			map[types.UID]*corev1.PodStatus{"a": running(corev1.ConditionTrue)}, nil, "", false},
		{"a mirror pod: nothing", boundPod("a", func(p *corev1.Pod) {
			p.Annotations = map[string]string{MirrorAnnotation: "x"}
			p.DeletionTimestamp = &now
		}), nil, nil, "", false},
		{"refused as written: Failed", boundPod("a", nil), nil, nil, "status a Failed UnsupportedPodSpec Pod was rejected: spec.x: no", true},
		{"refused, written already: nothing", boundPod("a", nil), nil, &written, "", true},
		{"refused, Failed in the API: nothing", boundPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), nil, nil, "", true},
		{"refused, deleted: deleted", boundPod("a", func(p *corev1.Pod) { p.DeletionTimestamp = &now }), nil, nil, "delete a", true},
	} {
		sent := map[types.UID]*corev1.PodStatus{}
		if tc.sent != nil {
			sent["a"] = tc.sent
		}
		rejected := map[types.UID]*admission.Refusal{}
		if tc.rejected {
			rejected["a"] = &admission.Refusal{Reason: UnsupportedReason, Message: "spec.x: no"}
		}
		var got []string
		for _, w := range Decide([]*corev1.Pod{tc.api}, tc.node, rejected, sent, t0) {
			switch {
			case w.Delete:
				got = append(got, "delete "+string(w.Pod.UID))
			case w.Status.Reason != "":
				got = append(got, fmt.Sprintf("status %s %s %s %s", w.Pod.UID, w.Status.Phase, w.Status.Reason, w.Status.Message))
			default:
				got = append(got, fmt.Sprintf("status %s %s", w.Pod.UID, w.Status.Phase))
			}
		}
		if g := strings.Join(got, ", "); g != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, g, tc.want)
		}
	}
}

// TestMerge: what the status manager keeps of the API's status.
func TestMerge(t *testing.T) {
	old := boundPod("a", nil).Status
	first := metav1.NewTime(t0.Add(time.Second))
	old.StartTime = &first
	old.Conditions = append(old.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: at(0)})
	s := Merge(old, *running(corev1.ConditionTrue))
	if s.QOSClass != corev1.PodQOSBestEffort || !s.StartTime.Equal(&first) {
		t.Errorf("qos %q start %v", s.QOSClass, s.StartTime)
	}
	var got []string
	for _, c := range s.Conditions {
		got = append(got, fmt.Sprintf("%s=%s@%v", c.Type, c.Status, c.LastTransitionTime.Sub(t0)))
	}
	// PodScheduled unchanged: the API's time; Ready new: the node's, to
	// the second; DisruptionTarget is not the node's: kept.
	if g := strings.Join(got, " "); g != "PodScheduled=True@0s Ready=True@3s DisruptionTarget=True@0s" {
		t.Errorf("conditions %s", g)
	}
	if cs := s.ContainerStatuses[0].State.Running.StartedAt; cs.Nanosecond() != 0 {
		t.Errorf("startedAt %v not as stored (seconds)", cs)
	}
}

// TestStatusPatch: the patch carries the pod's UID (the precondition) and
// only what changed, and applied to the old status gives the new.
func TestStatusPatch(t *testing.T) {
	old := boundPod("a", nil).Status
	new := Merge(old, *running(corev1.ConditionTrue))
	patch, err := StatusPatch("a", old, new)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatal(err)
	}
	if p["metadata"]["uid"] != "a" || p["status"]["qosClass"] != nil || p["status"]["phase"] != "Running" {
		t.Errorf("patch %s", patch)
	}
	oldJSON, _ := json.Marshal(corev1.Pod{Status: old})
	applied, err := strategicpatch.StrategicMergePatch(oldJSON, patch, corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(applied, &got); err != nil {
		t.Fatal(err)
	}
	if gotJSON, _ := json.Marshal(got.Status); string(gotJSON) != string(mustJSON(t, new)) {
		t.Errorf("patched status\n%s\nwant\n%s", gotJSON, mustJSON(t, new))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
