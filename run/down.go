package run

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
)

// Target names a pod to take down.
type Target struct {
	Namespace, Name string
}

func (t Target) String() string { return t.Namespace + "/" + t.Name }

// DownResult is one target's outcome.
type DownResult struct {
	Pod   string
	Found bool
	Err   error
}

// Down stops and removes the pods named by targets, concurrently. A pod
// that is not there is success (Found false).
func (h *Host) Down(ctx context.Context, targets []Target, o DownOptions) []DownResult {
	results := make([]DownResult, len(targets))
	pods, err := h.Pods(ctx) // one listing for the whole call
	if err != nil {
		for i, t := range targets {
			results[i] = DownResult{Pod: t.String(), Err: err}
		}
		return results
	}
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = DownResult{Pod: t.String()}
			var errs []error
			for _, p := range pods {
				if p.Namespace == t.Namespace && p.Name == t.Name {
					results[i].Found = true
					errs = append(errs, h.downUID(ctx, p.UID, o.GracePeriod))
				}
			}
			results[i].Err = errors.Join(errs...)
		}()
	}
	wg.Wait()
	return results
}

// minGrace is the kubelet's minimum shutdown window for a container.
const minGrace = 2 * time.Second

// defaultGrace is terminationGracePeriodSeconds' default.
const defaultGrace = 30 * time.Second

// downUID terminates a pod the kubelet's way (app containers in parallel,
// then init containers, then the sandbox), then detaches its network and
// removes its namespace, containers and directory. Logs are kept. Every
// part tolerates "already gone", so a half-made pod is cleaned up too.
func (h *Host) downUID(ctx context.Context, uid string, override *time.Duration) error {
	h.unsupervise(uid)
	key := uid
	st, err := h.loadState(uid)
	if err != nil {
		return err
	}
	grace := defaultGrace
	var pod *corev1.Pod
	if st != nil && st.Pod != nil {
		pod = st.Pod
		key = pod.Namespace + "/" + pod.Name
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
	}
	if override != nil {
		grace = *override
	}
	start := time.Now()
	ctrs, err := h.engine.List(ctx, map[string]string{labels.PodUID: uid})
	if err != nil {
		return err
	}
	var ips []string
	if st != nil {
		ips = st.PodIPs
	}
	// App containers together, then native sidecars one by one in reverse
	// order, then whatever else still runs (the sandbox last).
	errs := []error{h.stopGroup(ctx, withLabel(ctrs, labels.Kind, labels.KindApp), pod, ips, grace)}
	if pod != nil {
		for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
			errs = append(errs, h.stopGroup(ctx, named(ctrs, pod.Spec.InitContainers[i].Name), pod, ips, grace))
		}
	}
	errs = append(errs, h.stopGroup(ctx, withLabel(ctrs, labels.Kind, labels.KindInit), pod, ips, grace))
	for _, c := range ctrs {
		errs = append(errs, h.engine.Delete(ctx, c.ID))
	}
	errs = append(errs,
		h.delNetwork(ctx, uid, attachment(uid, pod)), // with the pod's ports, for portmap to remove its rules
		h.netns.Remove(sandbox.NetNSName(uid)),
		h.cgroups.Remove(h.podCgroup(uid))) // empty once every task is gone
	err = errors.Join(errs...)
	if err == nil {
		// Last, and only when every step before succeeded: the directory
		// holds the record (pod.json, the CNI configuration) another Down
		// needs to finish what failed.
		err = h.disk.Remove(h.layout(uid))
	}
	h.report(Event{Pod: key, Step: "down", Elapsed: time.Since(start), Err: err})
	return err
}

// withLabel keeps the containers whose label key has value v.
func withLabel(ctrs []engine.Container, key, v string) []engine.Container {
	var out []engine.Container
	for _, c := range ctrs {
		if c.Labels[key] == v {
			out = append(out, c)
		}
	}
	return out
}

// named keeps every attempt of one container.
func named(ctrs []engine.Container, name string) []engine.Container {
	return withLabel(ctrs, labels.Container, name)
}

// containerSpec finds a container of pod by name (nil without a pod).
func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, c := range resources.Containers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// stopGroup stops containers in parallel, each with its preStop hook and
// the grace period.
func (h *Host) stopGroup(ctx context.Context, ctrs []engine.Container, pod *corev1.Pod, ips []string, grace time.Duration) error {
	errs := make([]error, len(ctrs))
	var wg sync.WaitGroup
	for i, c := range ctrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := containerSpec(pod, c.Labels[labels.Container])
			errs[i] = h.stop(ctx, c, spec, h.target(spec, c.ID, ips), grace)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// target is where a container's probes and hooks go: the pod's first IP.
func (h *Host) target(spec *corev1.Container, id string, ips []string) probes.Target {
	t := probes.Target{ContainerID: id, Exec: execer{h.engine}, Observe: h.observeProbe}
	if len(ips) > 0 {
		t.Host = ips[0]
	}
	if spec != nil {
		t.Ports = spec.Ports
	}
	return t
}

// killWait bounds the wait for a task after SIGKILL.
const killWait = 10 * time.Second

// stop runs the container's preStop hook, then sends its stop signal and
// waits what is left of the grace period (at least minGrace), then SIGKILLs
// it: the kubelet's killContainer. A container that is not running is done.
// spec may be nil (no hook).
func (h *Host) stop(ctx context.Context, c engine.Container, spec *corev1.Container, target probes.Target, grace time.Duration) error {
	if c.Task.State != engine.TaskRunning && c.Task.State != engine.TaskPaused {
		return nil
	}
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
		start := time.Now()
		hctx, cancel := context.WithTimeout(ctx, grace)
		if err := probes.Hook(hctx, spec.Lifecycle.PreStop, target); err != nil {
			h.report(Event{Msg: fmt.Sprintf("container %s: preStop hook: %v", c.ID, err)})
		}
		cancel()
		grace -= time.Since(start)
	}
	sig, err := StopSignal(c.Labels[labels.StopSignal])
	if err != nil {
		return err
	}
	if err := h.engine.Kill(ctx, c.ID, sig); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, max(grace, minGrace))
	_, err = h.engine.Wait(wctx, c.ID)
	cancel()
	if err == nil || errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	if err := h.engine.Kill(ctx, c.ID, unix.SIGKILL); err != nil {
		return err
	}
	kctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	if _, err := h.engine.Wait(kctx, c.ID); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return fmt.Errorf("container %s did not exit after SIGKILL: %w", c.ID, err)
	}
	return nil
}

// StopSignal parses an image's STOPSIGNAL ("SIGQUIT", "QUIT", "3"); "" is SIGTERM.
func StopSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown stop signal %q", s)
}

// stopContainers is the undo of a container step: end its supervision,
// stop every attempt gracefully and remove them.
func (r *podRun) stopContainers(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		if l := r.w.loop(name); l != nil {
			l.stop()
		}
		ctrs, err := r.h.engine.List(ctx, map[string]string{labels.PodUID: r.pod.UID, labels.Container: name})
		if err != nil {
			return err
		}
		errs := []error{r.h.stopGroup(ctx, ctrs, r.pod.Pod, r.state.PodIPs, podGrace(r.pod.Pod))}
		for _, c := range ctrs {
			errs = append(errs, r.h.engine.Delete(ctx, c.ID))
		}
		return errors.Join(errs...)
	}
}

// removeContainers is the undo of the pause and init steps: remove every
// attempt of the named container.
func (r *podRun) removeContainers(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		ctrs, err := r.h.engine.List(ctx, map[string]string{labels.PodUID: r.pod.UID, labels.Container: name})
		if err != nil {
			return err
		}
		var errs []error
		for _, c := range ctrs {
			errs = append(errs, r.h.engine.Delete(ctx, c.ID))
		}
		return errors.Join(errs...)
	}
}

// stopSandbox ends a finished pod's sandbox: the pause task, the network and
// the namespace. Containers and the pod directory stay until `down`.
func (h *Host) stopSandbox(ctx context.Context, uid string, a sandbox.Attachment) error {
	id := SandboxID(uid)
	if err := h.engine.Kill(ctx, id, unix.SIGKILL); err != nil {
		return err
	}
	if _, err := h.engine.DeleteTask(ctx, id); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	return errors.Join(h.delNetwork(ctx, uid, a), h.netns.Remove(sandbox.NetNSName(uid)))
}
