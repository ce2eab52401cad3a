package apply

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

// webDeployment is a Deployment of one replica, web, both tests' set holds.
const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "busybox:1"}]
`

// TestWantSet: a set with a Deployment and a Job prunes the Deployment's
// pods it no longer makes, but neither the Job's pods (the Job's own) nor
// pods of nothing in the set; a set of plain pods prunes nothing.
func TestWantSet(t *testing.T) {
	set, err := manifest.Options{}.ParseUnresolved("set.yaml", []byte(webDeployment+`---
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
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
	if len(set.Pods) != 1 || len(set.Jobs) != 1 {
		t.Fatalf("want 1 pod and 1 Job, got %d, %d", len(set.Pods), len(set.Jobs))
	}
	w := WantSet(set)
	if !w.Prune || w.Owns == nil || len(w.Pods) != 1 {
		t.Fatalf("WantSet: prune %v, owns %v, %d pods; want a pruning want of 1 pod", w.Prune, w.Owns != nil, len(w.Pods))
	}
	// An older pod of the Deployment: another name, same owner.
	old := set.Pods[0].DeepCopy()
	old.Name = "web-old"
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}
	for _, tt := range []struct {
		what string
		pod  *corev1.Pod
		want bool
	}{
		{"the Deployment's pod", set.Pods[0].Pod, true},
		{"an older pod of the Deployment", old, true},
		{"a pod of the Job", set.Jobs[0].Pod(0, 0).Pod, false},
		{"a pod of nothing in the set", other, false},
	} {
		if got := w.Owns(&run.PodInfo{Pod: tt.pod}); got != tt.want {
			t.Errorf("Owns(%s) = %v, want %v", tt.what, got, tt.want)
		}
	}
	plain := WantSet(&manifest.Set{Pods: set.Pods})
	if plain.Prune || plain.Owns != nil {
		t.Errorf("a set of plain pods: prune %v, owns %v; want neither", plain.Prune, plain.Owns != nil)
	}
}

// TestDownTargets: down of a Deployment's file removes every pod of it on
// the node, the named ones first, each once; and says which of the pods
// named come from a daemon's sources.
func TestDownTargets(t *testing.T) {
	set, err := manifest.Options{}.LoadUnresolved([]string{"-"}, strings.NewReader(webDeployment))
	if err != nil {
		t.Fatal(err)
	}
	named := run.Target{Namespace: "default", Name: set.Pods[0].Name}
	old := set.Pods[0].DeepCopy()
	old.Name = "web-old"
	pods := []*run.PodInfo{
		{Namespace: "default", Name: named.Name, Source: "/etc/podrun/manifests/web.yaml", Pod: set.Pods[0].Pod},
		{Namespace: "default", Name: "web-old", Source: "/home/me/web.yaml", Pod: old},
		{Namespace: "default", Name: "other", Source: "/etc/podrun/manifests/other.yaml", Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}},
	}
	got := DownTargets(pods, []run.Target{named}, set.Workloads)
	want := []run.Target{named, {Namespace: "default", Name: "web-old"}}
	if !slices.Equal(got, want) {
		t.Errorf("DownTargets = %v, want %v", got, want)
	}
	if got := DownTargets(pods, []run.Target{named}, nil); !slices.Equal(got, []run.Target{named}) {
		t.Errorf("DownTargets without workloads = %v, want only %v", got, named)
	}
	daemon := func(source string) bool { return strings.HasPrefix(source, "/etc/podrun/manifests/") }
	sourced := Sourced(pods, want, daemon)
	if len(sourced) != 1 || sourced[0].Name != named.Name {
		t.Errorf("Sourced = %v, want the pod of %s only", sourced, named)
	}
}

// TestUnrunnable: up refuses a CronJob (it needs the daemon), and a pod
// that never completes when asked to wait for completion.
func TestUnrunnable(t *testing.T) {
	parse := func(doc string) *manifest.Set {
		t.Helper()
		set, err := manifest.Options{}.LoadUnresolved([]string{"-"}, strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	always := parse("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: web, image: busybox}]}\n")
	never := parse("apiVersion: v1\nkind: Pod\nmetadata: {name: once}\nspec: {restartPolicy: Never, containers: [{name: once, image: busybox}]}\n")
	cron := parse(`apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: tick, image: busybox}]
`)
	for _, tt := range []struct {
		name string
		set  *manifest.Set
		wait run.Wait
		want string
	}{
		{"a pod, ready", always, run.WaitReady, ""},
		{"a pod of Always, completion", always, run.WaitCompletion, "up --wait=completion: pod default/web (stdin (document 1)) has restartPolicy Always"},
		{"a pod of Never, completion", never, run.WaitCompletion, ""},
		{"a CronJob", cron, run.WaitRunning, "up: CronJob default/tick (stdin (document 1)) runs on its schedule"},
	} {
		err := Unrunnable(tt.set, run.UpOptions{Wait: tt.wait})
		if (err == nil) != (tt.want == "") || err != nil && !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %q", tt.name, err, tt.want)
		}
	}
}
