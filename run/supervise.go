package run

// The supervision of pods this process runs (supervisor.Worker), and the
// podRun side of it: what the supervisor does to a pod's containers.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/eviction"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/termination"
)

// supervise keeps r's supervisor running after Up, for Supervise.
func (h *Host) supervise(r *podRun) {
	h.mu.Lock()
	old := h.workers[r.pod.UID]
	h.workers[r.pod.UID] = r
	h.mu.Unlock()
	if old != nil && old != r {
		old.w.Stop()
	}
	if old != r && r.state.Ended == nil {
		r.w.Go(r.watchReady) // its version kept once Ready (wait.go)
		if eviction.Watched(r.pod.Pod) {
			r.w.Go(func(ctx context.Context) { r.h.evictions.Watch(ctx, r) }) // emptyDir sizeLimit, active deadline (end.go)
		}
	}
}

// removedCheck is how often Supervise looks for pods another podrun removed.
const removedCheck = time.Second

// Supervise keeps supervising the pods Up brought up in the foreground
// until ctx ends, then terminates them gracefully (the kubelet's order). A
// pod another podrun takes down (`podrun down`) is no longer supervised;
// once every pod is gone so, Supervise returns. Once every pod has
// finished and none will restart (restartPolicy Never or OnFailure), it
// completes them and returns their result, as --wait=completion: nil when
// all Succeeded, else their failures.
func (h *Host) Supervise(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return h.TerminateAll(context.Background())
		case <-h.clock.After(removedCheck):
			if h.forgetRemoved() && len(h.supervisedUIDs()) == 0 {
				h.report(Event{Msg: "every pod was taken down by another podrun; nothing left to supervise"})
				return nil
			}
			if pods := h.supervisedPods(); len(pods) > 0 && !slices.ContainsFunc(pods, func(r *podRun) bool { return !r.appsDone() }) {
				return h.completeAll(ctx, pods)
			}
		}
	}
}

// completeAll completes pods that have all finished and returns their
// result; they stay (containers, logs, status) until `down`.
func (h *Host) completeAll(ctx context.Context, pods []*podRun) error {
	var errs []error
	for _, r := range pods {
		unlock, err := h.lockPod(context.WithoutCancel(ctx), r.key, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = r.complete(ctx)
		unlock(false)
		h.unsupervise(r.pod.UID)
		phase, perr := r.result()
		h.report(Event{Pod: r.key, Msg: fmt.Sprintf("finished: %s", phase)})
		errs = append(errs, err, perr)
	}
	return errors.Join(errs...)
}

// forgetRemoved stops supervising the pods whose record is gone (taken
// down by another podrun), and reports whether there were any.
func (h *Host) forgetRemoved() bool {
	forgot := false
	for _, uid := range h.supervisedUIDs() {
		if st, err := h.loadState(uid); err == nil && st == nil {
			h.mu.Lock()
			key := uid
			if r := h.workers[uid]; r != nil {
				key = r.key
			}
			h.mu.Unlock()
			h.unsupervise(uid)
			h.report(Event{Pod: key, Msg: "taken down by another podrun; no longer supervised"})
			forgot = true
		}
	}
	return forgot
}

// TerminateAll stops every supervised pod gracefully and removes it.
func (h *Host) TerminateAll(ctx context.Context) error {
	pods := h.supervisedPods()
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, r := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.RemovePod(ctx, r.key, r.pod.UID)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// podRun is the supervisor's Pod: what it does to the pod's containers.
var _ supervisor.Pod = (*podRun)(nil)

// SandboxAlive reports whether the pod's sandbox is still the one this
// supervisor started or adopted: after a `podrun down` from another process,
// or a replacement, its containers must not be restarted into it.
func (r *podRun) SandboxAlive(ctx context.Context) bool {
	if r.pinned {
		id, ok := r.h.pinnedID(r.pod.UID, r.pod.Pod)
		return ok && id == r.pinID
	}
	t, err := r.h.engine.Task(ctx, r.sandboxID)
	return err == nil && t.State == engine.TaskRunning && t.PID == r.pausePID
}

// Grace is the pod's termination grace period, or a probe's override.
func (r *podRun) Grace(p *corev1.Probe) time.Duration {
	if p != nil && p.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	return podGrace(r.pod.Pod)
}

// Target is where container c's probes and hooks go.
func (r *podRun) Target(c *corev1.Container, id string) probes.Target {
	var ips []string
	if r.state != nil {
		ips = r.state.PodIPs
	}
	return r.h.target(c, id, ips)
}

// Prune removes the attempts of container name older than the previous
// one, as the kubelet's container GC keeps one dead container per
// container (MaxPerPodContainer 1) and removes the log of each container it
// removes (kuberuntime_gc.go): the containers, their termination files
// and their log files, rotated ones included. The attempts left are found
// with one listing of the container's attempts and one of its log
// directory, which hold the two kept and at most the one to go: a restart
// costs the same after a thousand restarts as after two.
func (r *podRun) Prune(ctx context.Context, name string, current int) {
	ctrs, err := r.h.engine.List(ctx, map[string]string{labels.PodUID: r.pod.UID, labels.Container: name})
	if err != nil {
		return // the next restart prunes them
	}
	kept := map[int]bool{} // attempts whose container could not be removed keep their log
	for _, c := range ctrs {
		n, err := strconv.Atoi(c.Labels[labels.RestartCount])
		if err != nil || n >= current-1 || c.ID != r.ID(name, n) {
			continue
		}
		if err := r.h.engine.Delete(ctx, c.ID); err != nil {
			kept[n] = true
			continue
		}
		// Its termination log and message go with it.
		_ = r.h.disk.RemoveFile(r.layout.TerminationLog(name, c.ID))
		_ = r.h.disk.RemoveFile(termination.Record(r.layout, name, c.ID))
		_ = r.h.disk.RemoveFile(termination.OldRecord(r.layout, name, c.ID))
	}
	dir := filepath.Dir(r.logPath(name, current))
	if err := logs.RemoveAttempts(dir, func(n int) bool { return n < current-1 && !kept[n] }); err != nil {
		r.Report(fmt.Sprintf("container %q: removing the logs of earlier attempts: %v", name, err))
	}
}

// ID is the container id of attempt n of container name.
func (r *podRun) ID(name string, n int) string { return ContainerID(r.pod.UID, name, n) }

// Start creates and starts attempt n of c.
func (r *podRun) Start(ctx context.Context, c *corev1.Container, kind string, n int) error {
	_, err := r.startContainer(ctx, c, kind, n)
	return err
}

// SetLabels records facts on a container.
func (r *podRun) SetLabels(ctx context.Context, id string, l map[string]string) error {
	return r.h.engine.SetLabels(ctx, id, l)
}

// Finish records how attempt n of c ended and deletes its task, then
// records its termination message: once the task is deleted the shim has
// closed its output and its log driver has written the last line.
func (r *podRun) Finish(ctx context.Context, c *corev1.Container, n int, e engine.Exit) error {
	id := r.ID(c.Name, n)
	if err := r.h.finish(ctx, r.pod.UID, id, e); err != nil {
		return err
	}
	msg := termination.Message(r.layout, r.logPath(c.Name, n), c, id, e.Code)
	return r.h.writeMessage(r.layout, c.Name, id, msg)
}

// Kill stops attempt id of c the kubelet's way (stop): its preStop hook,
// its stop signal, the grace period, then SIGKILL.
func (r *podRun) Kill(ctx context.Context, c *corev1.Container, id string, grace time.Duration) error {
	t, err := r.h.engine.Task(ctx, id)
	if err != nil {
		return nil // gone: nothing to stop
	}
	ctr := engine.Container{ID: id, Task: t, Labels: map[string]string{labels.StopSignal: stopSignal(c, r.images[c.Image])}}
	return r.h.stop(ctx, ctr, c, r.Target(c, id), grace)
}

// Report says something about the pod on the progress stream.
func (r *podRun) Report(msg string) { r.h.report(Event{Pod: r.key, Msg: msg}) }

// Lock joins the pod's lock (joinPod): the hold of this process's owner of
// the pod (the pipeline) when there is one.
func (r *podRun) Lock(ctx context.Context) (func(), error) { return r.h.joinPod(ctx, r.key) }
