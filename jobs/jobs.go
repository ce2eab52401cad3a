// Package jobs runs the Jobs and CronJobs of this node as the job and
// cronjob controllers would: it decides through plan (DecideJob,
// DecideCronJob) and makes and removes their pods through the pod
// lifecycle (Lifecycle, which run.Host implements).
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
	"github.com/podrun/podrun/run"
)

// Options tune RunJob: its pods are made with UpOptions (Wait completion,
// unless WaitRunning).
type Options struct {
	run.UpOptions
	// AwaitTTL: RunJob returns only once a finished Job's
	// ttlSecondsAfterFinished has removed it (the daemon, which stays).
	AwaitTTL bool
}

// Result is where a Job stands when RunJob returns.
type Result struct {
	Job    string // namespace/name
	Status plan.JobStatus
	// Pods are the outcomes of the pods it made, or deleted, meanwhile.
	Pods []run.Result
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
// supervised and looked at every second until they end. When ctx ends, the
// pods being made are undone before it returns.
func (c *Controller) RunJob(ctx context.Context, j *manifest.Job, o Options) Result {
	r := &jobRun{c: c, j: j, o: o, po: o.UpOptions, res: Result{Job: j.Key()}, inflight: map[string]*jobPodRun{}, done: make(chan *jobPodRun)}
	if r.po.Wait != run.WaitRunning {
		r.po.Wait = run.WaitCompletion
	}
	r.res.Err = r.run(ctx)
	r.drain(true)
	return r.res
}

// RunJobs runs the Jobs concurrently (RunJob) and returns their results in
// order.
func (c *Controller) RunJobs(ctx context.Context, jobs []*manifest.Job, o Options) []Result {
	out := make([]Result, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { out[i] = c.RunJob(ctx, j, o) })
	}
	wg.Wait()
	return out
}

// jobRun is one RunJob: the Job, what it has made and what it learned.
type jobRun struct {
	c        *Controller
	j        *manifest.Job
	o        Options
	po       run.UpOptions // the options its pods are made with
	res      Result
	recorded plan.JobStatus
	// inflight are the pods being made (by UID); each one's result comes
	// on done, once.
	inflight    map[string]*jobPodRun
	done        chan *jobPodRun
	lastFailure error // the last failed pod's failure
}

// jobPodRun is one pod a jobRun makes.
type jobPodRun struct {
	key    string
	uid    string
	index  int
	rs     []run.Result
	cancel context.CancelFunc // nil once the Job deleted it
}

// run decides and acts until the Job is done with, and returns why it
// failed, if it did.
func (r *jobRun) run(ctx context.Context) error {
	var err error
	if r.recorded, err = r.c.jobRecord(r.j); err != nil {
		return err
	}
	for ctx.Err() == nil {
		for _, p := range r.res.Pods {
			if p.Err != nil {
				return fmt.Errorf("job %s: %w", r.j.Key(), p.Err)
			}
		}
		a, node, made, err := r.decide(ctx)
		if err != nil {
			return err
		}
		r.delete(ctx, a.Delete, node)
		if a.Expired {
			// The TTL controller deletes the Job: applied again, it runs again.
			if err := r.c.Forget(r.j.Namespace, r.j.Name); err != nil {
				return err
			}
		}
		finished := a.Status.Finished() && len(r.inflight) == 0
		switch {
		case finished && r.o.AwaitTTL && !a.Next.IsZero():
			r.collect(ctx, a.Next, false) // until its TTL removes it
			continue
		case finished:
			return r.failure(a.Status)
		case a.Status.Condition == plan.JobSuspended && len(r.inflight) == 0:
			return nil
		}
		r.launch(ctx, a.Create, made, node)
		if r.o.Wait == run.WaitRunning && !r.o.Foreground {
			r.drain(false)
			return nil
		}
		// Pods made by an earlier podrun end without telling this one.
		if !r.collect(ctx, a.Next, a.Status.Active > len(r.inflight)) {
			return nil
		}
	}
	return ctx.Err()
}

// decide lists the node and decides (plan.DecideJob); made is how many pods
// the Job has made so far. A Job that has just finished is recorded before
// its active pods go, so that it stays finished.
func (r *jobRun) decide(ctx context.Context) (a plan.JobActions, node []*run.PodInfo, made int, err error) {
	now := r.c.clock.Now()
	node, err = r.c.life.Pods(ctx)
	if err != nil {
		return a, nil, 0, err
	}
	making := make([]plan.JobPod, 0, len(r.inflight))
	for _, m := range r.inflight {
		making = append(making, plan.JobPod{UID: m.uid, Index: m.index, Phase: corev1.PodPending, Created: now})
	}
	pods := jobPods(node, r.j, making, now)
	a = plan.DecideJob(r.j.Spec, r.j.RestartPolicy(), pods, r.recorded, now)
	r.res.Status = a.Status
	if a.Status.Finished() && !r.recorded.Finished() {
		if err := r.c.recordJob(r.j, a.Status); err != nil {
			return a, nil, 0, err
		}
		r.recorded = a.Status
	}
	return a, node, len(pods), nil
}

// delete removes the pods the Job deletes: one being made is cancelled
// (undone), one on the node is taken down under its lock.
func (r *jobRun) delete(ctx context.Context, uids []string, node []*run.PodInfo) {
	for _, uid := range uids {
		if m := r.inflight[uid]; m != nil {
			if m.cancel != nil {
				m.cancel()
				m.cancel = nil
			}
			continue
		}
		key := keyOf(node, uid)
		r.res.Pods = append(r.res.Pods, run.Result{Pod: key, UID: uid, Action: run.Removed, Err: r.c.life.RemovePod(ctx, key, uid)})
	}
}

// failure is why a finished Job failed, with its last failed pod's
// failure; nil when it completed.
func (r *jobRun) failure(st plan.JobStatus) error {
	if st.Condition != plan.JobFailed {
		return nil
	}
	err := fmt.Errorf("job %s failed: %s: %s", r.j.Key(), st.Reason, st.Message)
	if r.lastFailure != nil {
		err = fmt.Errorf("%w; the last failed pod: %w", err, r.lastFailure)
	}
	return err
}

// launch starts making a pod for each index of create; made is how many
// pods the Job has made before (they number its attempts).
func (r *jobRun) launch(ctx context.Context, create []int, made int, node []*run.PodInfo) {
	for i, index := range create {
		p := r.j.Pod(made+i, index)
		pctx, cancel := context.WithCancel(ctx)
		m := &jobPodRun{key: p.Key(), uid: p.UID, index: index, cancel: cancel}
		r.inflight[p.UID] = m
		go func() {
			defer cancel()
			m.rs = r.c.life.SyncPod(pctx, m.key, run.Want{Pods: []*manifest.Pod{p}}, r.po, node)
			r.done <- m
		}()
	}
}

// collect waits for a pod being made to end, until next (unless zero) or,
// with poll, a second at most, or until ctx ends; false when there is
// nothing to wait for.
func (r *jobRun) collect(ctx context.Context, next time.Time, poll bool) bool {
	d := time.Duration(-1)
	if !next.IsZero() {
		d = max(next.Sub(r.c.clock.Now()), 0)
	}
	if poll && (d < 0 || d > jobPodPoll) {
		d = jobPodPoll
	}
	if d < 0 && len(r.inflight) == 0 {
		return false
	}
	var timer <-chan time.Time
	if d >= 0 {
		timer = r.c.clock.After(d)
	}
	select {
	case m := <-r.done:
		r.ended(m)
	case <-timer:
	case <-ctx.Done():
	}
	return true
}

// drain waits for every pod being made, cancelled first with stop: by
// receiving their results only (a pod's undo runs on a context of its own,
// and a wait that also selects on an ended context spins).
func (r *jobRun) drain(stop bool) {
	if stop {
		for _, m := range r.inflight {
			if m.cancel != nil {
				m.cancel()
			}
		}
	}
	for len(r.inflight) > 0 {
		r.ended(<-r.done)
	}
}

// ended takes in the result of a pod made: a failed attempt is the Job's
// to decide on, a pod the Job deleted is Removed.
func (r *jobRun) ended(m *jobPodRun) {
	delete(r.inflight, m.uid)
	for _, p := range m.rs {
		var pf *run.PodFailedError
		switch {
		case m.cancel == nil: // deleted by the Job
			p.Action, p.Err, p.Phase = run.Removed, nil, ""
		case p.Err != nil && p.Phase == corev1.PodFailed && errors.As(p.Err, &pf):
			r.lastFailure, p.Err = p.Err, nil
		}
		r.res.Pods = append(r.res.Pods, p)
	}
}

// jobPods are the pods of Job j: those node lists, and those being made
// (making) that it does not list yet.
func jobPods(node []*run.PodInfo, j *manifest.Job, making []plan.JobPod, now time.Time) []plan.JobPod {
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
func jobPod(p *run.PodInfo, now time.Time) plan.JobPod {
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
				// A container that never started (StartError) shows 1970.
				if t.StartedAt.Unix() > 0 && t.StartedAt.Time.Before(jp.Created) {
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
func keyOf(node []*run.PodInfo, uid string) string {
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
func (c *Controller) jobFile(ns, name, uid string) string {
	return filepath.Join(c.dir, ns+"_"+name+"_"+uid+".json")
}

// recordJob records a Job's finished status.
func (c *Controller) recordJob(j *manifest.Job, st plan.JobStatus) error {
	if err := os.MkdirAll(c.dir, 0o750); err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return c.disk.WriteFile(c.jobFile(j.Namespace, j.Name, j.UID), data, 0o640)
}

// jobRecord reads the recorded status of Job j (zero when it has none),
// and forgets the records of earlier Jobs of its name.
func (c *Controller) jobRecord(j *manifest.Job) (plan.JobStatus, error) {
	var st plan.JobStatus
	others, err := c.jobFiles(j.Namespace, j.Name)
	if err != nil {
		return st, err
	}
	for _, f := range others {
		if f == c.jobFile(j.Namespace, j.Name, j.UID) {
			continue
		}
		if err := c.disk.RemoveFile(f); err != nil {
			return st, err
		}
	}
	data, err := os.ReadFile(c.jobFile(j.Namespace, j.Name, j.UID))
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

// Forget removes the records of the Jobs named namespace/name (down, a
// Job past its TTL).
func (c *Controller) Forget(namespace, name string) error {
	files, err := c.jobFiles(namespace, name)
	for _, f := range files {
		err = errors.Join(err, c.disk.RemoveFile(f))
	}
	return err
}

// jobFiles are the records of the Jobs named namespace/name.
func (c *Controller) jobFiles(namespace, name string) ([]string, error) {
	entries, err := os.ReadDir(c.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), namespace+"_"+name+"_")
		// Namespaces and names have no "_": the rest is <uid>.json alone.
		if ok && !strings.Contains(rest, "_") && strings.HasSuffix(rest, ".json") {
			out = append(out, filepath.Join(c.dir, e.Name()))
		}
	}
	return out, err
}
