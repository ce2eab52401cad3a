package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestStatusInitContainersAndConditions: the kubelet's words for init
// containers and pod conditions. A completed init container is ready; while
// an init container has not completed, Initialized is False with reason
// ContainersNotInitialized and its name in the message, and ContainersReady
// and Ready are False with ContainersNotReady naming the app containers.
func TestStatusInitContainersAndConditions(t *testing.T) {
	H.require(t)
	mustRunUp(t, "cd-ok", `apiVersion: v1
kind: Pod
metadata:
  name: cd-ok
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: init1, image: `+H.Image+`, command: ["true"]}
  containers:
  - {name: app, image: `+H.Image+`, command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]}
`, "--wait=ready")
	p := podStatus(t, "cd-ok")
	if ics := p.Status.InitContainerStatuses; len(ics) != 1 || !ics[0].Ready || ics[0].State.Terminated == nil || ics[0].State.Terminated.Reason != "Completed" {
		t.Errorf("init container status %+v, want ready: true, terminated Completed", ics)
	}
	if c := podCondition(p, corev1.PodInitialized); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized %+v, want True", c)
	}

	// A pod whose second init container runs: Initialized False, naming it.
	file := H.WriteManifest(t, "cd-slow.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: cd-slow
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: init1, image: `+H.Image+`, command: ["true"]}
  - {name: init2, image: `+H.Image+`, command: ["sleep", "4"]}
  containers:
  - {name: app, image: `+H.Image+`, command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]}
`)
	downOnCleanup(t, file)
	up := H.Start(t, "up", "--wait=ready", file)
	p = waitStatus(t, "cd-slow", 30*time.Second, "init2 running", func(p corev1.Pod) (bool, string) {
		ics := p.Status.InitContainerStatuses
		return len(ics) == 2 && ics[1].State.Running != nil, fmt.Sprintf("%+v", ics)
	})
	init := podCondition(p, corev1.PodInitialized)
	if init == nil || init.Status != corev1.ConditionFalse || init.Reason != "ContainersNotInitialized" ||
		init.Message != "containers with incomplete status: [init2]" {
		t.Errorf("Initialized %+v, want False, ContainersNotInitialized, \"containers with incomplete status: [init2]\"", init)
	}
	for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		if c := podCondition(p, typ); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" ||
			c.Message != "containers with unready status: [app]" {
			t.Errorf("%s %+v, want False, ContainersNotReady, \"containers with unready status: [app]\"", typ, c)
		}
	}
	if ics := p.Status.InitContainerStatuses; !ics[0].Ready || ics[1].Ready {
		t.Errorf("init container statuses %+v, want init1 ready (completed), init2 not yet", ics)
	}
	if err := up.Wait(); err != nil {
		t.Errorf("up: %v", err)
	}
}
