package run

// Teardown: podrun's one way of stopping a pod's containers (killPod: the
// kubelet's order, preStop hooks, stop signals and grace periods), used by
// down, rollback, eviction, the active deadline and completion.

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/podrun/podrun/supervisor"
)

// minGrace is the kubelet's minimum shutdown window for a container.
const minGrace = 2 * time.Second

// defaultGrace is terminationGracePeriodSeconds' default.
const defaultGrace = 30 * time.Second

// teardown says what killPod takes down.
type teardown struct {
	uid   string
	pod   *corev1.Pod // nil when the pod's record is lost: no hooks, no sidecar order
	ips   []string    // where preStop hooks go
	grace time.Duration
	// w is the pod's supervisor in this process, if any: its loops (or
	// only's) end first, so that nothing is restarted meanwhile.
	w *supervisor.Worker
	// only limits the teardown to the attempts of one container ("": all).
	only string
	// sandbox: then the pod's sandbox ends: its pause task, network and
	// network namespace.
	sandbox bool
	// remove: then the containers are deleted and, with sandbox, the pod
	// cgroup and, when everything before succeeded, the pod directory (the
	// record another teardown needs to finish what failed). Without it,
	// the stopped containers keep their exits for status and logs.
	remove bool
}

// killPod is the kubelet's killPodWithSyncResult: supervision ends, then app
// containers stop in parallel, native sidecars one by one in reverse order,
// then the init containers, each with its preStop hook and grace (stop);
// then the sandbox, then what is removed. Every part treats "already gone"
// as done, so it finishes a half-made or half-removed pod too. A teardown
// is never cancelled half-way: it runs on its own context (ctx's values,
// not its end), each step under its own deadline, as containerd's CRI does.
func (h *Host) killPod(ctx context.Context, t teardown) error {
	ctx = context.WithoutCancel(ctx)
	if t.w != nil {
		for _, l := range t.w.Loops() {
			if t.only == "" || l.Container().Name == t.only {
				l.Stop()
			}
		}
	}
	match := map[string]string{labels.PodUID: t.uid}
	if t.only != "" {
		match[labels.Container] = t.only
	}
	lctx, cancel := stepContext(ctx)
	ctrs, err := h.engine.List(lctx, match)
	cancel()
	if err != nil {
		return err
	}
	var errs []error
	for _, group := range killOrder(ctrs, t.pod) {
		errs = append(errs, h.stopGroup(ctx, group, t.pod, t.ips, t.grace))
		if !t.remove {
			errs = append(errs, h.recordExits(ctx, group))
		}
	}
	// The stopped containers are removed while the sandbox stops (they
	// need nothing of it), the sandbox's own container after it.
	var others, sandboxes []engine.Container
	if t.remove {
		for _, c := range ctrs {
			if c.Labels[labels.Container] == labels.SandboxName {
				sandboxes = append(sandboxes, c)
			} else {
				others = append(others, c)
			}
		}
	}
	var removed error
	var wg sync.WaitGroup
	wg.Go(func() { removed = h.deleteAll(ctx, others) })
	if t.sandbox {
		errs = append(errs, h.stopSandbox(ctx, t.uid, attachment(t.uid, t.pod)))
	}
	wg.Wait()
	errs = append(errs, removed)
	if t.remove {
		errs = append(errs, h.deleteAll(ctx, sandboxes))
		// Snapshots of creates cut off (a killed podrun) have no container
		// to list: they are found by their keys, the pod's container ids.
		prefix := shortUID(t.uid) + "-"
		if t.only != "" {
			prefix += t.only + "-"
		}
		dctx, cancel := stepContext(ctx)
		errs = append(errs, h.engine.RemoveSnapshots(dctx, prefix))
		cancel()
		if t.sandbox {
			errs = append(errs, h.cgroups.Remove(h.podCgroup(t.uid))) // empty once every task is gone
			if err := errors.Join(errs...); err != nil {
				return err
			}
			return h.disk.Remove(h.layout(t.uid))
		}
	}
	return errors.Join(errs...)
}

// deleteAll removes containers (their exited tasks and snapshots too),
// together, each under its own deadline.
func (h *Host) deleteAll(ctx context.Context, ctrs []engine.Container) error {
	errs := make([]error, len(ctrs))
	var wg sync.WaitGroup
	for i, c := range ctrs {
		wg.Go(func() {
			dctx, cancel := stepContext(ctx)
			defer cancel()
			errs[i] = h.engine.Delete(dctx, c.ID)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// killOrder groups a pod's containers in the order they are stopped: the
// app containers together, then each init container (native sidecars in
// reverse order), then any init container the pod's record does not name.
// The sandbox is not in any group.
func killOrder(ctrs []engine.Container, pod *corev1.Pod) [][]engine.Container {
	groups := [][]engine.Container{withLabel(ctrs, labels.Kind, labels.KindApp)}
	grouped := map[string]bool{}
	if pod != nil {
		for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
			name := pod.Spec.InitContainers[i].Name
			groups = append(groups, attemptsOf(ctrs, name))
			grouped[name] = true
		}
	}
	var others []engine.Container
	for _, c := range withLabel(ctrs, labels.Kind, labels.KindInit) {
		if !grouped[c.Labels[labels.Container]] {
			others = append(others, c)
		}
	}
	return append(groups, others)
}

// recordExits records how the containers of a group that ran ended, as
// their supervisor would have (finish).
func (h *Host) recordExits(ctx context.Context, ctrs []engine.Container) error {
	var errs []error
	for _, c := range ctrs {
		if c.Task.State != engine.TaskRunning && c.Task.State != engine.TaskPaused {
			continue
		}
		t, err := h.engine.Task(ctx, c.ID)
		if err != nil || t.State != engine.TaskStopped {
			continue
		}
		errs = append(errs, h.finish(ctx, c.Labels[labels.PodUID], c.ID, engine.Exit{Code: t.ExitCode, ExitedAt: t.ExitedAt}))
	}
	return errors.Join(errs...)
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

// attemptsOf keeps every attempt of one container.
func attemptsOf(ctrs []engine.Container, name string) []engine.Container {
	return withLabel(ctrs, labels.Container, name)
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
		start := h.clock.Now()
		hctx, cancel := context.WithTimeout(ctx, grace)
		if err := probes.Hook(hctx, spec.Lifecycle.PreStop, target); err != nil {
			h.report(Event{Msg: fmt.Sprintf("container %s: preStop hook: %v", c.ID, err)})
		}
		cancel()
		grace -= h.clock.Since(start)
	}
	sig, err := StopSignal(c.Labels[labels.StopSignal])
	if err != nil {
		return err
	}
	if err := h.signal(ctx, c.ID, sig); err != nil {
		return err
	}
	if h.waitExit(ctx, c.ID, max(grace, minGrace)) == nil {
		return nil
	}
	if err := h.signal(ctx, c.ID, unix.SIGKILL); err != nil {
		return err
	}
	if err := h.waitExit(ctx, c.ID, killWait); err != nil {
		return fmt.Errorf("container %s did not exit after SIGKILL: %w", c.ID, err)
	}
	return nil
}

// signal sends sig to container id's task, within a teardown step's deadline.
func (h *Host) signal(ctx context.Context, id string, sig syscall.Signal) error {
	sctx, cancel := stepContext(ctx)
	defer cancel()
	return h.engine.Kill(sctx, id, sig)
}

// waitExit waits at most d for container id's task to exit; gone is exited.
func (h *Host) waitExit(ctx context.Context, id string, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if _, err := h.engine.Wait(wctx, id); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	return nil
}

// stopSignal is the signal that stops c: its lifecycle.stopSignal, else its
// image's STOPSIGNAL ("" is SIGTERM), as the kubelet chooses it.
func stopSignal(c *corev1.Container, img engine.Image) string {
	if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
		return string(*c.Lifecycle.StopSignal)
	}
	return img.Config.StopSignal
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

func podGrace(p *corev1.Pod) time.Duration {
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return defaultGrace
}

// execer adapts the engine to probes.Execer.
type execer struct{ e engine.Engine }

func (x execer) Exec(ctx context.Context, id string, args []string, out io.Writer) (int, error) {
	return x.e.Exec(ctx, id, engine.ExecSpec{Args: args, Stdout: out, Stderr: out})
}
