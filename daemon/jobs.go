package daemon

import (
	"context"
	"sync"

	"github.com/podrun/podrun/jobs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

// jobRun is a Job or CronJob of the sources, run by its own goroutine
// (jobs.Controller.RunJob, RunCronJob) for as long as the sources define it.
type jobRun struct {
	kind, ns, name string
	source         string
	cancel         context.CancelFunc
	done           chan struct{}
}

// jobController is the controller of the node's Jobs and CronJobs.
func (d *Daemon) jobController() *jobs.Controller { return jobs.New(d.h, d.o.Root) }

// syncJobs starts a goroutine for each Job and CronJob of the sources that
// has none (a changed one is another one, by UID), and stops those of the
// ones no source defines any more, except those of broken sources; the
// records of a Job no source names any more are forgotten. A stopped one is
// waited for (its pods being made are undone) outside jobRuns' lock, which
// the workers' prune checks take.
func (d *Daemon) syncJobs(ctx context.Context, broken map[string]bool) {
	stopped, forget := d.jobRuns.assign(ctx, d.jobWants(), broken)
	for _, jr := range stopped {
		<-jr.done
	}
	for _, jr := range forget {
		if err := d.jobController().Forget(jr.ns, jr.name); err != nil {
			d.log.Error("forgetting a removed Job", "job", jr.ns+"/"+jr.name, "err", err)
		}
	}
}

// jobWants are the Jobs and CronJobs of the sources' last scan, Jobs
// first, each with how its goroutine runs it.
func (d *Daemon) jobWants() []jobWant {
	js, cronJobs := d.src.Jobs()
	ctl := d.jobController()
	opts := jobs.Options{UpOptions: run.UpOptions{Wait: run.WaitRunning, Foreground: true, Timeout: d.o.PodTimeout, RetryStartErrors: true}, AwaitTTL: true}
	var out []jobWant
	for _, j := range js {
		out = append(out, jobWant{uid: j.UID, run: &jobRun{kind: "Job", ns: j.Namespace, name: j.Name, source: j.Source.Origin()},
			start: func(jctx context.Context) { d.logJob(ctl.RunJob(jctx, j, opts)) }})
	}
	for _, cj := range cronJobs {
		out = append(out, jobWant{uid: cj.UID, run: &jobRun{kind: "CronJob", ns: cj.Namespace, name: cj.Name, source: cj.Source.Origin()},
			start: func(jctx context.Context) { ctl.RunCronJob(jctx, cj, opts, d.clock.Now(), d.logJob) }})
	}
	return out
}

// jobPod reports whether pod belongs to one of the sources' Jobs or
// CronJobs: their runners own it, no prune removes it.
func (d *Daemon) jobPod(p *run.PodInfo) bool {
	if p.Pod == nil {
		return false
	}
	return d.jobRuns.owns(p.Namespace, manifest.CronJobOf(p.Pod), manifest.JobOf(p.Pod))
}

// jobWant is a Job or CronJob the sources define: its UID, what its
// goroutine is known by (kind, names, source; not yet started) and what
// the goroutine runs.
type jobWant struct {
	uid   string
	run   *jobRun
	start func(context.Context)
}

// jobRuns are the goroutines of the sources' Jobs and CronJobs, by UID, and
// the names of those the sources define: the sync assigns them (assign),
// the workers' prunes ask whether a pod is theirs (owns), the shutdown
// stops them (stopAll). The zero value runs none.
type jobRuns struct {
	mu   sync.Mutex
	runs map[string]*jobRun
	// current names the Jobs (by UID) and CronJobs (by
	// "CronJob/namespace/name") the sources define, broken ones' included.
	current map[string]bool
}

// assign starts a goroutine for each of wants that has none, cancels
// those of the ones not wanted (kept, as last applied, when their source
// is broken), and returns those cancelled, to be waited for, and the Jobs
// whose records to forget once they have ended (no Job of their name is
// wanted any more).
func (r *jobRuns) assign(ctx context.Context, wants []jobWant, broken map[string]bool) (stopped, forget []*jobRun) {
	wanted := map[string]func(context.Context){}
	names := map[string]bool{} // kind/namespace/name
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs = map[string]*jobRun{}
	}
	for _, w := range wants {
		names[w.run.kind+"/"+w.run.ns+"/"+w.run.name] = true
		wanted[w.uid] = w.start
		if r.runs[w.uid] == nil {
			r.runs[w.uid] = w.run
		}
	}
	r.current = map[string]bool{}
	for uid, jr := range r.runs {
		start := wanted[uid]
		switch {
		case start == nil && broken[jr.source]:
			r.current[uid] = true // kept as last applied
		case start == nil:
			delete(r.runs, uid)
			if jr.cancel != nil {
				jr.cancel()
				stopped = append(stopped, jr)
			}
			if !names[jr.kind+"/"+jr.ns+"/"+jr.name] && jr.kind == "Job" {
				forget = append(forget, jr)
			}
		case jr.cancel == nil:
			jctx, cancel := context.WithCancel(ctx)
			jr.cancel, jr.done = cancel, make(chan struct{})
			go func() {
				defer close(jr.done)
				start(jctx)
			}()
			r.current[uid] = true
		default:
			r.current[uid] = true
		}
	}
	for _, jr := range r.runs {
		if jr.kind == "CronJob" {
			r.current[jr.kind+"/"+jr.ns+"/"+jr.name] = true
		}
	}
	return stopped, forget
}

// owns reports whether a pod of namespace ns made for CronJob cronJob (a
// name) or Job jobUID (either "" when none) belongs to a Job or CronJob the
// sources define.
func (r *jobRuns) owns(ns, cronJob, jobUID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cronJob != "" && r.current["CronJob/"+ns+"/"+cronJob] {
		return true
	}
	return jobUID != "" && r.current[jobUID]
}

// stopAll stops every goroutine and waits for it (the shutdown): the pods
// being made are undone, the running ones keep running.
func (r *jobRuns) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, jr := range r.runs {
		if jr.cancel != nil {
			jr.cancel()
			<-jr.done
		}
		delete(r.runs, uid)
	}
}

// logJob logs how a Job ended.
func (d *Daemon) logJob(r jobs.Result) {
	for _, p := range r.Pods {
		if p.Err != nil {
			d.log.Error("job pod", "job", r.Job, "pod", p.Pod, "err", p.Err)
		} else {
			d.log.Info("job pod "+string(p.Action), "job", r.Job, "pod", p.Pod, "phase", p.Phase)
		}
	}
	switch {
	case r.Err != nil:
		d.log.Error("job failed", "job", r.Job, "err", r.Err)
	case r.Status.Finished():
		d.log.Info("job "+r.Status.Condition, "job", r.Job, "succeeded", r.Status.Succeeded, "failed", r.Status.Failed)
	}
}
