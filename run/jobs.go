package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
)

// JobResult is where a Job stands when RunJob returns.
type JobResult struct {
	Job    string // namespace/name
	Status plan.JobStatus
	// Pods are the outcomes of the pods it made, or deleted, meanwhile.
	Pods []Result
	// Err is why the Job failed, with the last failed pod's failure, or
	// why it could not be run.
	Err error
}

// jobPodPoll is how often a Job's pods that no create of this process
// waits for (made by an earlier podrun) are looked at.
const jobPodPoll = time.Second

// RunJob runs a Job as the job controller would on this node: it decides
// (plan.DecideJob) from the Job's pods on the node which pods to make, makes
// them (each run to completion, unless o.Wait is WaitRunning), and decides
// again whenever one ends, a back-off or the deadline passes, until the Job
// is Complete or Failed (and its ttlSecondsAfterFinished, if 0 or with
// o.AwaitTTL, has removed its pods). With WaitRunning it makes the pods of
// one decision and returns: a later RunJob (up, the daemon) goes on from
// what is there; with WaitRunning and Foreground (the daemon) the pods are
// supervised and looked at every second until they end.
func (h *Host) RunJob(ctx context.Context, j *manifest.Job, o UpOptions) JobResult {
	res := JobResult{Job: j.Key()}
	type made struct {
		key    string
		uid    string
		index  int
		rs     []Result
		cancel context.CancelFunc
	}
	inflight := map[string]*made{} // by UID
	done := make(chan *made)
	po := o
	if po.Wait != WaitRunning {
		po.Wait = WaitCompletion
	}
	var lastFailure error
	// wait waits for a pod being made to end, until next (unless zero)
	// or, with poll, a second at most; false when there is nothing to
	// wait for.
	wait := func(next time.Time, poll bool) bool {
		d := time.Duration(-1)
		if !next.IsZero() {
			d = max(next.Sub(h.clock.Now()), 0)
		}
		if poll && (d < 0 || d > jobPodPoll) {
			d = jobPodPoll
		}
		if d < 0 && len(inflight) == 0 {
			return false
		}
		var timer <-chan time.Time
		if d >= 0 {
			timer = h.clock.After(d)
		}
		select {
		case m := <-done:
			delete(inflight, m.uid)
			for _, r := range m.rs {
				var pf *PodFailedError
				switch {
				case m.cancel == nil: // deleted by the Job
					r.Action, r.Err, r.Phase = Removed, nil, ""
				case r.Err != nil && r.Phase == corev1.PodFailed && errors.As(r.Err, &pf):
					lastFailure, r.Err = r.Err, nil // a failed attempt: the Job decides
				}
				res.Pods = append(res.Pods, r)
			}
		case <-timer:
		case <-ctx.Done():
		}
		return true
	}
	defer func() {
		for _, m := range inflight {
			if m.cancel != nil {
				m.cancel()
			}
		}
		for len(inflight) > 0 {
			wait(time.Time{}, false)
		}
	}()
	recorded, err := h.jobRecord(j)
	if err != nil {
		res.Err = err
		return res
	}
	for ctx.Err() == nil {
		for _, r := range res.Pods {
			if r.Err != nil {
				res.Err = fmt.Errorf("job %s: %w", j.Key(), r.Err)
				return res
			}
		}
		node, err := h.Pods(ctx)
		if err != nil {
			res.Err = err
			return res
		}
		making := make([]plan.JobPod, 0, len(inflight))
		for _, m := range inflight {
			making = append(making, plan.JobPod{UID: m.uid, Index: m.index, Phase: corev1.PodPending, Created: h.clock.Now()})
		}
		pods := jobPods(node, j, making, h.clock.Now())
		a := plan.DecideJob(j.Spec, j.RestartPolicy(), pods, recorded, h.clock.Now())
		res.Status = a.Status
		if a.Status.Finished() && !recorded.Finished() {
			// Recorded before its active pods go: the Job stays finished.
			if err := h.recordJob(j, a.Status); err != nil {
				res.Err = err
				return res
			}
			recorded = a.Status
		}
		for _, uid := range a.Delete {
			if m := inflight[uid]; m != nil {
				if m.cancel != nil {
					m.cancel()
					m.cancel = nil
				}
				continue
			}
			r := Result{Pod: keyOf(node, uid), UID: uid, Action: Removed, Err: h.downUID(ctx, uid, nil)}
			res.Pods = append(res.Pods, r)
		}
		if a.Expired {
			// The TTL controller deletes the Job: applied again, it runs again.
			if err := h.ForgetJob(j.Namespace, j.Name); err != nil {
				res.Err = err
				return res
			}
		}
		if a.Status.Finished() && len(inflight) == 0 && o.AwaitTTL && !a.Next.IsZero() {
			wait(a.Next, false) // until its TTL removes it
			continue
		}
		if a.Status.Finished() && len(inflight) == 0 {
			if a.Status.Condition == plan.JobFailed {
				res.Err = fmt.Errorf("job %s failed: %s: %s", j.Key(), a.Status.Reason, a.Status.Message)
				if lastFailure != nil {
					res.Err = fmt.Errorf("%w; the last failed pod: %w", res.Err, lastFailure)
				}
			}
			return res
		}
		if a.Status.Condition == plan.JobSuspended && len(inflight) == 0 {
			return res
		}
		for i, index := range a.Create {
			p := j.Pod(len(pods)+i, index) // attempts are numbered by the pods made so far
			pctx, cancel := context.WithCancel(ctx)
			m := &made{key: p.Key(), uid: p.UID, index: index, cancel: cancel}
			inflight[p.UID] = m
			go func() {
				defer cancel()
				m.rs = h.SyncPod(pctx, m.key, Want{Pods: []*manifest.Pod{p}}, po, node)
				done <- m
			}()
		}
		if o.Wait == WaitRunning && !o.Foreground {
			for len(inflight) > 0 {
				wait(time.Time{}, false)
			}
			return res
		}
		// Pods made by an earlier podrun end without telling this one.
		if !wait(a.Next, a.Status.Active > len(inflight)) {
			return res
		}
	}
	res.Err = ctx.Err()
	return res
}

// jobPods are the pods of Job j: those node lists, and those being made
// (making) that it does not list yet.
func jobPods(node []*PodInfo, j *manifest.Job, making []plan.JobPod, now time.Time) []plan.JobPod {
	var pods []plan.JobPod
	listed := map[string]bool{}
	for _, p := range node {
		if p.Pod != nil && manifest.JobOf(p.Pod) == j.UID {
			pods = append(pods, jobPod(p, now))
			listed[p.UID] = true
		}
	}
	for _, m := range making {
		if !listed[m.UID] {
			pods = append(pods, m)
		}
	}
	return pods
}

// jobPod is what the job controller knows of one of a Job's pods.
func jobPod(p *PodInfo, now time.Time) plan.JobPod {
	jp := plan.JobPod{UID: p.UID, Index: -1, Phase: p.Pod.Status.Phase, Created: now}
	if i, ok := p.Pod.Annotations[manifest.JobIndexLabel]; ok {
		fmt.Sscan(i, &jp.Index)
	}
	if jp.Phase == "" {
		jp.Phase = corev1.PodPending
	}
	if t := p.Pod.Status.StartTime; t != nil {
		jp.Created = t.Time
	}
	for _, cs := range [][]corev1.ContainerStatus{p.Pod.Status.InitContainerStatuses, p.Pod.Status.ContainerStatuses} {
		for _, c := range cs {
			jp.Restarts += int(c.RestartCount)
			if t := c.State.Terminated; t != nil {
				if !t.StartedAt.IsZero() && t.StartedAt.Time.Before(jp.Created) {
					jp.Created = t.StartedAt.Time
				}
				if t.FinishedAt.Time.After(jp.Finished) {
					jp.Finished = t.FinishedAt.Time
				}
			}
		}
	}
	if jp.Finished.IsZero() && (jp.Phase == corev1.PodSucceeded || jp.Phase == corev1.PodFailed) {
		jp.Finished = now
	}
	return jp
}

// keyOf is the namespace/name of the pod uid in node.
func keyOf(node []*PodInfo, uid string) string {
	for _, p := range node {
		if p.UID == uid {
			return p.Key()
		}
	}
	return uid
}

// A finished Job's condition is recorded in <root>/jobs/<ns>_<name>_<uid>.json
// (a Job's status, which a cluster keeps in the Job object): the pods that
// ran may be gone.
func (h *Host) jobFile(ns, name, uid string) string {
	return filepath.Join(h.cfg.Root, "jobs", ns+"_"+name+"_"+uid+".json")
}

// recordJob records a Job's finished status.
func (h *Host) recordJob(j *manifest.Job, st plan.JobStatus) error {
	if err := os.MkdirAll(filepath.Join(h.cfg.Root, "jobs"), 0o750); err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return h.disk.WriteFile(h.jobFile(j.Namespace, j.Name, j.UID), data, 0o640)
}

// jobRecord reads the recorded status of Job j (zero when it has none),
// and forgets the records of earlier Jobs of its name.
func (h *Host) jobRecord(j *manifest.Job) (plan.JobStatus, error) {
	var st plan.JobStatus
	others, err := h.jobFiles(j.Namespace, j.Name)
	if err != nil {
		return st, err
	}
	for _, f := range others {
		if f == h.jobFile(j.Namespace, j.Name, j.UID) {
			continue
		}
		if err := h.disk.RemoveFile(f); err != nil {
			return st, err
		}
	}
	data, err := os.ReadFile(h.jobFile(j.Namespace, j.Name, j.UID))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("reading the record of job %s: %w", j.Key(), err)
	}
	return st, nil
}

// ForgetJob removes the records of the Jobs named namespace/name (down, a
// Job past its TTL).
func (h *Host) ForgetJob(namespace, name string) error {
	files, err := h.jobFiles(namespace, name)
	for _, f := range files {
		err = errors.Join(err, h.disk.RemoveFile(f))
	}
	return err
}

// jobFiles are the records of the Jobs named namespace/name.
func (h *Host) jobFiles(namespace, name string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(h.cfg.Root, "jobs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), namespace+"_"+name+"_")
		// Namespaces and names have no "_": the rest is <uid>.json alone.
		if ok && !strings.Contains(rest, "_") && strings.HasSuffix(rest, ".json") {
			out = append(out, filepath.Join(h.cfg.Root, "jobs", e.Name()))
		}
	}
	return out, err
}
