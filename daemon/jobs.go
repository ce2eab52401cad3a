package daemon

import (
	"context"

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
// waited for (its pods being made are undone) without holding jobsMu, which
// the workers' prune checks take.
func (d *Daemon) syncJobs(ctx context.Context, broken map[string]bool) {
	stopped, forget := d.assignJobs(ctx, broken)
	for _, jr := range stopped {
		<-jr.done
	}
	for _, jr := range forget {
		if err := d.jobController().Forget(jr.ns, jr.name); err != nil {
			d.log.Error("forgetting a removed Job", "job", jr.ns+"/"+jr.name, "err", err)
		}
	}
}

// assignJobs is syncJobs' part under jobsMu: it starts the goroutines
// wanted, cancels those not, and returns them and the Jobs to forget once
// they have ended.
func (d *Daemon) assignJobs(ctx context.Context, broken map[string]bool) (stopped, forget []*jobRun) {
	js, cronJobs := d.src.Jobs()
	ctl := d.jobController()
	wanted := map[string]func(context.Context){}
	names := map[string]bool{} // kind/namespace/name
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	opts := jobs.Options{UpOptions: run.UpOptions{Wait: run.WaitRunning, Foreground: true, Timeout: d.o.PodTimeout, RetryStartErrors: true}, AwaitTTL: true}
	for _, j := range js {
		names["Job/"+j.Key()] = true
		wanted[j.UID] = func(jctx context.Context) { d.logJob(ctl.RunJob(jctx, j, opts)) }
		if d.jobRuns[j.UID] == nil {
			d.jobRuns[j.UID] = &jobRun{kind: "Job", ns: j.Namespace, name: j.Name, source: j.Source.Origin()}
		}
	}
	for _, cj := range cronJobs {
		names["CronJob/"+cj.Key()] = true
		wanted[cj.UID] = func(jctx context.Context) { ctl.RunCronJob(jctx, cj, opts, d.clock.Now(), d.logJob) }
		if d.jobRuns[cj.UID] == nil {
			d.jobRuns[cj.UID] = &jobRun{kind: "CronJob", ns: cj.Namespace, name: cj.Name, source: cj.Source.Origin()}
		}
	}
	d.current = map[string]bool{}
	for uid, jr := range d.jobRuns {
		start := wanted[uid]
		switch {
		case start == nil && broken[jr.source]:
			d.current[uid] = true // kept as last applied
		case start == nil:
			delete(d.jobRuns, uid)
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
			d.current[uid] = true
		default:
			d.current[uid] = true
		}
	}
	for _, jr := range d.jobRuns {
		if jr.kind == "CronJob" {
			d.current[jr.kind+"/"+jr.ns+"/"+jr.name] = true
		}
	}
	return stopped, forget
}

// jobPod reports whether pod belongs to one of the sources' Jobs or
// CronJobs: their runners own it, no prune removes it.
func (d *Daemon) jobPod(p *run.PodInfo) bool {
	if p.Pod == nil {
		return false
	}
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	if cj := manifest.CronJobOf(p.Pod); cj != "" && d.current["CronJob/"+p.Namespace+"/"+cj] {
		return true
	}
	uid := manifest.JobOf(p.Pod)
	return uid != "" && d.current[uid]
}

// stopJobs stops every Job and CronJob goroutine (the shutdown): the pods
// being made are undone, the running ones keep running.
func (d *Daemon) stopJobs() {
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	for uid, jr := range d.jobRuns {
		if jr.cancel != nil {
			jr.cancel()
			<-jr.done
		}
		delete(d.jobRuns, uid)
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
