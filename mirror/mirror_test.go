package mirror

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/manifest"
)

const node = "dev"

// static is a static pod of node named name-dev with config hash h.
func static(name, h string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + node, Namespace: "default", UID: types.UID(h),
			Labels: map[string]string{"app": name},
			Annotations: map[string]string{manifest.ConfigSourceAnnotation: "file", manifest.ConfigHashAnnotation: h,
				manifest.ConfigSeenAnnotation: "2026-11-29T16:00:00Z"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
}

// apiPod is a pod of the API named name-dev on node on (mirror of hash h
// unless h is "").
func apiPod(name, h, on string, uid types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + node, Namespace: "default", UID: uid},
		Spec: corev1.PodSpec{NodeName: on}}
	if h != "" {
		p.Annotations = map[string]string{Annotation: h}
	}
	return p
}

func TestOf(t *testing.T) {
	s := static("web", "h1")
	s.ResourceVersion, s.Status.Phase = "12", corev1.PodRunning
	m := Of(s, Node{Name: node, UID: "node-uid"})
	want := map[string]string{manifest.ConfigSourceAnnotation: "file", manifest.ConfigHashAnnotation: "h1",
		manifest.ConfigSeenAnnotation: "2026-11-29T16:00:00Z", Annotation: "h1"}
	if !reflect.DeepEqual(m.Annotations, want) {
		t.Errorf("annotations %v, want %v", m.Annotations, want)
	}
	if len(m.OwnerReferences) != 1 {
		t.Fatalf("owners %+v", m.OwnerReferences)
	}
	o := m.OwnerReferences[0]
	if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != node || o.UID != "node-uid" || o.Controller == nil || !*o.Controller || o.BlockOwnerDeletion != nil {
		t.Errorf("owner %+v: want v1 Node %s node-uid, controller, no blockOwnerDeletion (NodeRestriction)", o, node)
	}
	if m.Name != "web-dev" || m.Namespace != "default" || m.Spec.NodeName != node || m.Labels["app"] != "web" || m.Spec.Containers[0].Image != "busybox" {
		t.Errorf("mirror pod %+v", m)
	}
	if m.UID != "" || m.ResourceVersion != "" || m.Status.Phase != "" {
		t.Errorf("uid %q resourceVersion %q phase %q: the API server's to set", m.UID, m.ResourceVersion, m.Status.Phase)
	}
	if s.Annotations[Annotation] != "" || len(s.OwnerReferences) != 0 {
		t.Errorf("the static pod was changed: %+v", s.ObjectMeta)
	}
}

func TestDecide(t *testing.T) {
	deleting := apiPod("web", "h1", node, "m1")
	deleting.DeletionTimestamp = &metav1.Time{}
	running := corev1.PodStatus{Phase: corev1.PodRunning}
	for _, tc := range []struct {
		name     string
		static   []Static
		stopping []string
		api      []*corev1.Pod
		want     []string // kind key existing-uid
	}{
		{name: "nothing", want: nil},
		{name: "a static pod without a mirror pod gets one",
			static: []Static{{Pod: static("web", "h1")}},
			want:   []string{"create default/web-dev "}},
		{name: "in sync, status not known yet: nothing",
			static: []Static{{Pod: static("web", "h1")}},
			api:    []*corev1.Pod{apiPod("web", "h1", node, "m1")},
			want:   nil},
		{name: "in sync with a status: the status is written",
			static: []Static{{Pod: static("web", "h1"), Status: &running}},
			api:    []*corev1.Pod{apiPod("web", "h1", node, "m1")},
			want:   []string{"status default/web-dev m1"}},
		{name: "the mirror pod of another hash is replaced",
			static: []Static{{Pod: static("web", "h2"), Status: &running}},
			api:    []*corev1.Pod{apiPod("web", "h1", node, "m1")},
			want:   []string{"replace default/web-dev m1"}},
		{name: "a mirror pod being deleted is replaced",
			static: []Static{{Pod: static("web", "h1")}},
			api:    []*corev1.Pod{deleting},
			want:   []string{"replace default/web-dev m1"}},
		{name: "a pod of the name that is not a mirror pod is left alone",
			static: []Static{{Pod: static("web", "h1"), Status: &running}},
			api:    []*corev1.Pod{apiPod("web", "", node, "p1")},
			want:   []string{"foreign default/web-dev p1"}},
		{name: "a mirror pod of no static pod is deleted",
			api:  []*corev1.Pod{apiPod("gone", "h1", node, "m1")},
			want: []string{"delete default/gone-dev m1"}},
		{name: "a mirror pod of a static pod still stopping stays",
			stopping: []string{"default/gone-dev"},
			api:      []*corev1.Pod{apiPod("gone", "h1", node, "m1")},
			want:     nil},
		{name: "a pod of no static pod that is not a mirror pod is not ours",
			api:  []*corev1.Pod{apiPod("api", "", node, "p1")},
			want: nil},
		{name: "pods of other nodes are ignored",
			static: []Static{{Pod: static("web", "h1")}},
			api:    []*corev1.Pod{apiPod("web", "h0", "other", "m0"), apiPod("x", "h0", "other", "m1")},
			want:   []string{"create default/web-dev "}},
		{name: "several, sorted",
			static: []Static{{Pod: static("b", "h1")}, {Pod: static("a", "h1")}, {Pod: static("c", "h2"), Status: &running}},
			api:    []*corev1.Pod{apiPod("c", "h2", node, "mc"), apiPod("old", "h9", node, "mo"), apiPod("b", "h0", node, "mb")},
			want:   []string{"create default/a-dev ", "replace default/b-dev mb", "status default/c-dev mc", "delete default/old-dev mo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range Decide(node, Snapshot{Static: tc.static, Stopping: tc.stopping}, tc.api) {
				uid := types.UID("")
				if a.Existing != nil {
					uid = a.Existing.UID
				}
				if a.Kind != Delete && a.Static == nil {
					t.Errorf("%s without its static pod", a.Kind)
				}
				got = append(got, fmt.Sprintf("%s %s %s", a.Kind, a.key(), uid))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestMergeStatus(t *testing.T) {
	old := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
		{Type: "example.com/gate", Status: corev1.ConditionFalse},
	}, ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "c"}}}
	new := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: "example.com/gate", Status: corev1.ConditionTrue},
	}}
	got := mergeStatus(old, new)
	want := []corev1.PodCondition{
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
		{Type: "example.com/gate", Status: corev1.ConditionFalse},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}
	if !reflect.DeepEqual(got.Conditions, want) {
		t.Errorf("conditions %+v\nwant %+v (others' kept from the API, the kubelet's from the node)", got.Conditions, want)
	}
	if got.Phase != corev1.PodRunning || len(got.ResourceClaimStatuses) != 1 {
		t.Errorf("merged %+v", got)
	}
	if len(new.Conditions) != 3 {
		t.Errorf("new changed: %+v", new.Conditions)
	}
}

func TestStatusPatch(t *testing.T) {
	old := corev1.PodStatus{Phase: corev1.PodPending}
	for _, tc := range []struct {
		name      string
		new       corev1.PodStatus
		patch     string
		unchanged bool
	}{
		{"same", old, `{"metadata":{"uid":"m1"}}`, true},
		{"phase", corev1.PodStatus{Phase: corev1.PodRunning}, `{"metadata":{"uid":"m1"},"status":{"phase":"Running"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, unchanged, err := statusPatch("m1", old, tc.new)
			if err != nil || string(p) != tc.patch || unchanged != tc.unchanged {
				t.Errorf("patch %s, unchanged %v, %v; want %s, %v", p, unchanged, err, tc.patch, tc.unchanged)
			}
		})
	}
}
