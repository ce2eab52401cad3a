// Up's plan: one pod's named steps, each with its undo (podRun.plan), which
// Execute runs; which steps appear depends only on the pod's spec.

package run

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
)

// plan lists the pod's steps; which steps appear depends only on the spec.
func (r *podRun) plan() []Step {
	r.sandboxID = SandboxID(r.pod.UID)
	steps := []Step{
		{Name: "pod directory", Do: r.createDirs, Undo: r.removeDirs},
		{Name: "volumes", Do: r.setupVolumes, Undo: r.undoVolumes},
		{Name: "images", Do: r.ensureImages},
		{Name: "pod cgroup", Do: r.createPodCgroup, Undo: r.removePodCgroup}, // sandbox.go
	}
	if !r.hostNetwork() {
		steps = append(steps, Step{Name: "sandbox: netns", Do: r.createNetNS, Undo: r.removeNetNS})
	}
	name := "sandbox: pause"
	if r.pinned {
		name = "sandbox: namespaces"
	}
	if r.hostNetwork() {
		steps = append(steps, Step{Name: name, Do: r.startSandbox, Undo: inOrder(r.undoContainer(labels.SandboxName), r.unpin)})
	} else {
		// The network namespace exists already, so the sandbox and CNI ADD
		// do not wait for each other.
		// The app containers are created meanwhile, in the sandbox's
		// namespaces (prepareApps).
		steps = append(steps, Step{Name: name + " + network", Do: both(then(r.startSandbox, r.prepareApps), r.addNetwork),
			Undo: inOrder(r.delNetwork, r.undoPrepared, r.undoContainer(labels.SandboxName), r.unpin)})
	}
	steps = append(steps, Step{Name: "sandbox: files", Do: r.writeFiles})
	for i := range r.pod.Spec.InitContainers {
		c := &r.pod.Spec.InitContainers[i]
		if status.IsSidecar(c) {
			steps = append(steps, Step{Name: "sidecar/" + c.Name, Do: r.startSidecar(c), Undo: r.undoContainer(c.Name)})
			continue
		}
		steps = append(steps, Step{Name: "init/" + c.Name, Do: r.runInit(c), Undo: r.undoContainer(c.Name)})
	}
	// The app containers start in spec order, each once the one before has
	// started (startApps), as the kubelet's SyncPod starts them.
	var apps []*corev1.Container
	var names []string
	var undo []func(context.Context) error
	for i := range r.pod.Spec.Containers {
		c := &r.pod.Spec.Containers[i]
		apps, names = append(apps, c), append(names, c.Name)
		undo = append([]func(context.Context) error{r.undoContainer(c.Name)}, undo...) // in reverse
	}
	steps = append(steps, Step{Name: "container/" + strings.Join(names, ","), Do: r.startApps(apps), Undo: inOrder(undo...)})
	switch r.wait {
	case WaitRunning:
		steps = append(steps, Step{Name: "record", Do: r.recordRunning})
	case WaitCompletion:
		steps = append(steps, Step{Name: "wait: completion", Do: r.waitCompletion})
	default:
		steps = append(steps, Step{Name: "wait: ready", Do: r.waitReady})
	}
	return steps
}
