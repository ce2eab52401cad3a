package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/volumes"
)

// PodFailedError is a pod that ran to completion and failed.
type PodFailedError struct {
	Pod    string
	Reason string
}

func (e *PodFailedError) Error() string { return fmt.Sprintf("pod %s failed: %s", e.Pod, e.Reason) }

// podRun is one pod's pipeline and what its steps learn along the way.
type podRun struct {
	h      *Host
	pod    *manifest.Pod
	key    string
	layout volumes.Layout
	source string // for labels and listings: "stdin" or a file's absolute path
	wait   Wait
	w      *supervisor.Worker
	// objMu guards pod.ConfigMaps and pod.Secrets, which a supervised pod's
	// container starts read and UpdateConfigVolumes replaces.
	objMu sync.Mutex
	// prepared are the specs of the containers prepareApps created, by id,
	// until their start takes them; prepMu guards it.
	prepMu   sync.Mutex
	prepared map[string]*specs.Spec

	state  *State
	vols   *volumes.Prepared
	images map[string]engine.Image // by image reference as written
	netns  string
	// pinned: the pod's sandbox is its pinned IPC and UTS namespaces (pins),
	// the namespace at pins.Identity() being pinID; else a pause process,
	// pausePID.
	pinned    bool
	pins      sandbox.Pins
	pinID     uint64
	pausePID  uint32
	ips       []net.IP
	hostname  string
	sandboxID string
	// pullBackOff: image failures go into the host's back-off (UpOptions.PullBackOff).
	pullBackOff bool
	// keepFailed: an init container failing under restartPolicy Never
	// leaves the pod's status in final (UpOptions.RecordFailures).
	keepFailed bool
	final      *corev1.PodStatus
	// retryStarts: a container that could not start is left to its
	// restarts (UpOptions.RetryStartErrors).
	retryStarts bool
	// minReady: waitReady waits until the pod has stayed Ready this long
	// (a changed pod that may be rolled back: readySettle).
	minReady time.Duration
}

func (r *podRun) hostNetwork() bool { return r.pod.Spec.HostNetwork }

// plan lists the pod's steps; which steps appear depends only on the spec.
func (r *podRun) plan() []Step {
	r.sandboxID = SandboxID(r.pod.UID)
	steps := []Step{
		{Name: "pod directory", Do: r.createDirs, Undo: r.removeDirs},
		{Name: "volumes", Do: r.setupVolumes, Undo: r.undoVolumes},
		{Name: "images", Do: r.ensureImages},
		{Name: "pod cgroup", Do: r.createPodCgroup, Undo: r.removePodCgroup}, // cgroups.go
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

// both runs two actions concurrently and returns both errors.
func both(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		errc := make(chan error, 1)
		go func() { errc <- a(ctx) }()
		errB := b(ctx)
		return errors.Join(<-errc, errB)
	}
}

// then runs b after a, when a succeeded.
func then(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := a(ctx); err != nil {
			return err
		}
		return b(ctx)
	}
}

// inOrder runs undo actions one after the other, all of them, joining errors.
func inOrder(fns ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, fn := range fns {
			errs = append(errs, fn(ctx))
		}
		return errors.Join(errs...)
	}
}

func (e *ExitError) Error() string {
	s := fmt.Sprintf("container %q exited with code %d", e.Container, e.Code)
	if e.OOMKilled {
		s += " (" + status.ReasonOOMKilled + ")"
	}
	if e.Tail != "" {
		s += "; last log lines:\n" + e.Tail
	}
	return s
}

// outcome is the phase of a pod whose pipeline has run, from what the node
// says: Failed when the node ended it (its deadline), Succeeded or Failed
// when it ran to completion (with its app containers' failures), else
// Running. A Failed pod's error is a *PodFailedError.
func (r *podRun) outcome() (corev1.PodPhase, error) {
	if r.state.Ended == nil && (r.wait == WaitRunning || !r.appsDone()) {
		return corev1.PodRunning, nil
	}
	return r.result()
}

// result is the phase of a pod that has ended: Failed when the node ended
// it, else Succeeded, or Failed with its app containers' failures.
func (r *podRun) result() (corev1.PodPhase, error) {
	key := r.pod.Key()
	if e := r.state.Ended; e != nil {
		return corev1.PodFailed, &PodFailedError{Pod: key, Reason: e.Reason + ": " + e.Message}
	}
	var failures []string
	for _, l := range r.w.Loops() {
		if st := l.State(); l.Role() == supervisor.RoleApp && st.ExitCode != 0 {
			logPath := r.logPath(l.Container().Name, st.Restarts)
			failures = append(failures, (&ExitError{Container: l.Container().Name, Code: st.ExitCode, OOMKilled: st.OOMKilled, Tail: readTail(logPath)}).Error())
		}
	}
	if len(failures) > 0 {
		return corev1.PodFailed, &PodFailedError{Pod: key, Reason: strings.Join(failures, "; ")}
	}
	return corev1.PodSucceeded, nil
}

// teardown fills in what killPod needs to know of this pod.
func (r *podRun) teardown(t teardown) teardown {
	t.uid, t.pod, t.w = r.pod.UID, r.pod.Pod, r.w
	if t.grace == 0 {
		t.grace = podGrace(r.pod.Pod)
	}
	if r.state != nil {
		t.ips = r.state.PodIPs
	}
	return t
}

// undoContainer is the undo of a container step (the pause's too): every
// attempt of the container is stopped and removed.
func (r *podRun) undoContainer(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		return r.h.killPod(ctx, r.teardown(teardown{only: name, remove: true}))
	}
}
