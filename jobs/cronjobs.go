package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
	"github.com/podrun/podrun/run"
)

// cronRetry is how soon a CronJob whose pods could not be listed is looked
// at again.
const cronRetry = 10 * time.Second

// RunCronJob runs a CronJob as the cronjob controller would, until ctx
// ends: at each scheduled time (plan.DecideCronJob: concurrencyPolicy,
// startingDeadlineSeconds, suspend) it makes the Job for that time and runs
// it (RunJob, each in its own goroutine; report is called with each Job's
// result), and keeps the newest finished Jobs its history limits allow.
// since is when the CronJob was first seen: the first time it runs for
// is the first scheduled after it, or after the newest Job of it on the
// node.
func (c *Controller) RunCronJob(ctx context.Context, cj *manifest.CronJob, o Options, since time.Time, report func(Result)) {
	runners := map[string]context.CancelFunc{} // the Jobs this process runs, by name
	finished := make(chan string)
	defer func() {
		for _, cancel := range runners {
			cancel()
		}
		for range runners {
			<-finished
		}
	}()
	last := since
	for ctx.Err() == nil {
		next := c.clock.Now().Add(cronRetry)
		if node, err := c.life.Pods(ctx); err == nil {
			next = c.cronSync(ctx, cj, o, node, &last, runners, finished, report)
		}
		select {
		case name := <-finished:
			delete(runners, name)
		case <-c.clock.After(max(next.Sub(c.clock.Now()), 0)):
		case <-ctx.Done():
		}
	}
}

// cronSync is one decision of RunCronJob; it returns when to decide again.
func (c *Controller) cronSync(ctx context.Context, cj *manifest.CronJob, o Options, node []*run.PodInfo, last *time.Time,
	runners map[string]context.CancelFunc, finished chan<- string, report func(Result)) time.Time {
	active := map[string][]string{} // the Jobs of cj with pods not finished: their pods' UIDs
	for _, p := range node {
		if p.Pod == nil || p.Namespace != cj.Namespace || manifest.CronJobOf(p.Pod) != cj.Name {
			continue
		}
		if at, err := time.Parse(time.RFC3339, p.Pod.Annotations[manifest.ScheduledAnnotation]); err == nil && at.After(*last) {
			*last = at
		}
		if ph := p.Pod.Status.Phase; ph != corev1.PodSucceeded && ph != corev1.PodFailed {
			job := p.Pod.Labels[manifest.JobNameLabel]
			active[job] = append(active[job], p.UID)
		}
	}
	for name := range runners {
		if _, ok := active[name]; !ok {
			active[name] = nil
		}
	}
	a := plan.DecideCronJob(cj.Spec, cj.Schedule, *last, len(active), c.clock.Now())
	if a.Skipped != "" {
		c.life.Report(run.Event{Pod: cj.Key(), Msg: "cronjob: scheduled Job skipped: " + a.Skipped})
	}
	if a.ReplaceActive {
		for name, uids := range active {
			if cancel := runners[name]; cancel != nil {
				cancel() // its pods being made are deleted, RunJob returns
			}
			for _, uid := range uids {
				if err := c.life.DownUID(ctx, uid); err != nil {
					c.life.Report(run.Event{Pod: cj.Key(), Msg: "cronjob: replacing Job " + name, Err: err})
				}
			}
		}
	}
	if !a.Run.IsZero() {
		*last = a.Run
		j := cj.Job(a.Run)
		jctx, cancel := context.WithCancel(ctx)
		runners[j.Name] = cancel
		go func() {
			defer cancel()
			report(c.RunJob(jctx, j, o))
			finished <- j.Name
		}()
	}
	c.cronHistory(ctx, cj, node, runners)
	return a.Next
}

// cronHistory removes the finished Jobs of cj beyond its history limits:
// their pods and records.
func (c *Controller) cronHistory(ctx context.Context, cj *manifest.CronJob, node []*run.PodInfo, runners map[string]context.CancelFunc) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	var runs []plan.CronJobRun
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), cj.Namespace+"_"+cj.Name+"-")
		minutes, _, ok2 := strings.Cut(rest, "_")
		n, err := strconv.ParseInt(minutes, 10, 64)
		if !ok || !ok2 || err != nil {
			continue
		}
		name := cj.Name + "-" + minutes
		if runners[name] != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.dir, e.Name()))
		var st plan.JobStatus
		if err != nil || json.Unmarshal(data, &st) != nil || !st.Finished() {
			continue
		}
		runs = append(runs, plan.CronJobRun{Name: name, Scheduled: time.Unix(n*60, 0), Failed: st.Condition == plan.JobFailed})
	}
	for _, name := range plan.CronJobHistory(cj.Spec, runs) {
		var errs []error
		for _, p := range node {
			if p.Namespace == cj.Namespace && p.Pod != nil && p.Pod.Labels[manifest.JobNameLabel] == name {
				errs = append(errs, c.life.DownUID(ctx, p.UID))
			}
		}
		if err := errors.Join(append(errs, c.Forget(cj.Namespace, name))...); err != nil {
			c.life.Report(run.Event{Pod: cj.Key(), Msg: "cronjob: removing Job " + name + " (history limit)", Err: err})
		}
	}
}
