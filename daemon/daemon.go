// Package daemon keeps the pods described by a static-manifest directory
// (and optionally a URL) running, the way the kubelet runs static pods:
// inotify plus a periodic re-scan, debounced writes, no teardown on bad
// content, adoption after a restart.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/fsnotify/fsnotify"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/atomicfile"
	"github.com/podrun/podrun/imagegc"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/rollout"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/updates"
)

// Options configure the daemon.
type Options struct {
	ManifestDir string // absolute; watched, not recursively
	URL         string // optional manifest URL, polled every Resync
	// URLHeaderFile holds headers sent with every fetch of URL.
	URLHeaderFile string
	Resync        time.Duration // full re-scan period (the backstop to inotify)
	// Settle is how long a file must stay unwritten before it is read, so
	// that a file written in chunks is read once, whole. A file renamed
	// into the directory is read at once.
	Settle time.Duration
	// StopPodsOnExit terminates the pods on SIGTERM; by default they keep
	// running, like the kubelet's.
	StopPodsOnExit bool
	StatusFile     string        // where ps and status read the daemon's problems
	Root           string        // podrun's state directory: the Jobs' records are kept under it
	PodTimeout     time.Duration // for starting one pod
	// ProgressDeadline is how long a new version of a pod has to become
	// Ready before the last Ready version replaces it (rollback.go), when
	// neither the pod's annotation nor its Deployment says; 0 turns
	// rollback off.
	ProgressDeadline time.Duration
	// History is the versions of the pods kept (rollout.Open of the
	// state root) that a rollback goes back to; nil: none kept, no rollback.
	History *rollout.History
	// Admission is the node's policy for the pods read: a pod it refuses is
	// the problem of its source, like an invalid manifest.
	Admission manifest.Options
	// LogRetention bounds the logs of pods that are gone, enforced at start
	// and every logGCPeriod.
	LogRetention logs.Retention
	// ImagesDir holds image archives imported before pods start (images.go).
	ImagesDir string
	// ImageGC is the image garbage collection policy, applied every
	// imageGCPeriod; the images of the sources' pods are kept.
	ImageGC imagegc.Policy
	// Clock drives the daemon's timers and stamps; nil is the real one.
	Clock clock.Clock
	// Cluster is the API server as a third source of pods (the pods
	// bound to this node, package kubepods); nil: none.
	Cluster Cluster
	// Mirrors, when set, is told the static pods after every sync and
	// listing (mirrors.go): their mirror pods in the cluster's API.
	Mirrors Mirrors
	// Pulls, when set, is told how the daemon's pulls go (it is the
	// images.Progress of its host): the status file shows them (pulls.go).
	Pulls *Pulls
	// UpdateWindows are when a changed pod may replace the running one
	// (updates.go); none: at any time.
	UpdateWindows []updates.Window
	// UpdateLockTimeout is how long a pod's update lock may hold its
	// update back (0: for as long as it is held).
	UpdateLockTimeout time.Duration
	// LockProbe probes a pod's update lock; nil is updates.LockHeld.
	LockProbe LockProbe
}

// Cluster is the API server as a source of pods, as the kubelet's
// apiserver source beside its file and http ones.
type Cluster interface {
	// Source is the source label of its pods.
	Source() string
	// Wanted are the pods bound to the node to run now (a pod being
	// deleted is not: grace is its deletion's grace period, by UID) and
	// the problems of those that cannot run; synced is false until the
	// API server first answered, and then its pods on the node are kept
	// as they are. It never blocks.
	Wanted() (pods []*manifest.Pod, grace map[string]time.Duration, problems []string, synced bool)
	// Changed receives when what Wanted returns changed.
	Changed() <-chan struct{}
}

// imageGCPeriod is how often the daemon checks the image filesystem (the
// kubelet's ImageGCPeriod).
const imageGCPeriod = 5 * time.Minute

// logGCPeriod is how often the daemon removes the logs of pods that are gone.
const logGCPeriod = time.Hour

// quick is the delay before acting on a created, renamed or removed file:
// enough to take the files of one command (a `mv` of 50 renames them within
// 3 ms) in one sync, short enough not to count in a pod's start.
const quick = 5 * time.Millisecond

// Daemon keeps the sources' pods running. Run's goroutine alone touches
// src's scans, logged and archives (no lock); what other goroutines share
// (the workers, the Job runners, the progress watches, the collectors, the
// HTTP handlers) is in a type that holds its own lock: workers, kept,
// pub, jobRuns, watches, health.
type Daemon struct {
	o       Options
	h       *run.Host
	src     *Sources
	log     *slog.Logger
	metrics *Metrics
	health  *health
	// logged is the problem text last logged of each source: a source's
	// problems are logged when they change, not at every resync.
	logged map[string]string
	// archives are the image archives of ImagesDir as last imported.
	archives map[string]archiveState
	// kept are the images image GC keeps (images.go).
	kept keptImages
	// workers change the pods, one goroutine per pod (workers.go).
	workers *workers
	// pub is what the status file is made of besides the workers' results.
	pub published
	// jobRuns are the goroutines of the sources' Jobs and CronJobs
	// (jobs.go).
	jobRuns jobRuns
	// watches are the pods whose progress is watched (rollback.go); kick
	// asks the loop for a sync.
	watches watches
	kick    chan struct{}
	clock   clock.Clock
	// clusterChanged receives when the pods bound to the node changed
	// (Options.Cluster).
	clusterChanged <-chan struct{}
	// static are the pods the directory and URL want, as the last dispatch
	// ran them (not the API server's pods; Run's goroutine alone touches it).
	static []*manifest.Pod
	// statusMu orders the writes of the status file; written is the
	// status last written, without its pulls (written again with new
	// ones: pulls.go).
	statusMu sync.Mutex
	written  Status
	// updates are the changed pods held back (updates.go).
	updates updateHolds
}

// published is what the status file is made of besides the workers'
// results, as the last sync found it.
type published struct {
	mu         sync.Mutex
	problems   []Problem
	sources    map[string]string // namespace/name -> source
	rolledBack []Rollback        // the pods wanted that run a rollback's version
}

func (p *published) setProblems(problems []Problem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = problems
}

func (p *published) setWanted(sources map[string]string, rolledBack []Rollback) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sources, p.rolledBack = sources, rolledBack
}

// get returns a copy of the problems, and the sources and rollbacks (never
// changed once set).
func (p *published) get() (problems []Problem, sources map[string]string, rolledBack []Rollback) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.problems), p.sources, p.rolledBack
}

// New returns a daemon on a connected host.
func New(h *run.Host, o Options, log *slog.Logger, m *Metrics) *Daemon {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Admission.Clock == nil {
		o.Admission.Clock = o.Clock // stamps the static pods
	}
	src := NewSources(o.ManifestDir, o.URL)
	src.Admission, src.URLHeaderFile = o.Admission, o.URLHeaderFile
	var changed <-chan struct{} // nil: never ready
	if o.Cluster != nil {
		src.API, changed = o.Cluster.Source(), o.Cluster.Changed()
	}
	d := &Daemon{o: o, h: h, src: src, log: log, metrics: m, health: &health{}, logged: map[string]string{},
		archives: map[string]archiveState{}, pub: published{sources: map[string]string{}},
		kick: make(chan struct{}, 1), clock: o.Clock, clusterChanged: changed}
	d.workers = newWorkers(d.syncPod)
	m.gaugeUpdates(d.updates.pending)
	return d
}

// Health reports the daemon's state for /healthz and /readyz.
func (d *Daemon) Health() (alive, ready bool, detail string) { return d.health.get() }

// Run syncs until ctx ends; hup forces a re-scan.
func (d *Daemon) Run(ctx context.Context, hup <-chan os.Signal) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", d.o.ManifestDir, err)
	}
	defer w.Close()
	if err := w.Add(d.o.ManifestDir); err != nil {
		return fmt.Errorf("watching %s: %w", d.o.ManifestDir, err)
	}
	if d.o.ImagesDir != "" {
		if err := w.Add(d.o.ImagesDir); err != nil {
			d.log.Warn("not watching the images directory (it is read at each re-scan)", "dir", d.o.ImagesDir, "err", err)
		}
	}
	pullsPublished := d.publishPulls(ctx) // from the first sync's pulls on
	retry := d.sync(ctx, nil)
	// Ready once the first sync's pods are up (or failed), as systemd units
	// ordered after the daemon expect.
	d.workers.wait()
	d.publish()
	d.notify(sd.SdNotifyReady)
	go d.watchdog(ctx)
	l := d.newLoop(d.clock.Now(), retry)
	go d.collectLogs(ctx, l.logGC)
	go d.collectImages(ctx, l.imageGC)
	timer := d.clock.NewTimer(0)
	defer timer.Stop()
	for {
		wait, _ := l.sched.next(d.clock.Now()) // the re-scan is always scheduled
		timer.Reset(wait)
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("the directory watch ended")
			}
			l.event(ev)
		case err := <-w.Errors:
			d.log.Warn("directory watch", "err", err)
		case <-timer.C(): // or a stale fire of a timer reset since: then nothing is due
			for _, name := range l.sched.fire(d.clock.Now()) {
				l.fire(ctx, name)
			}
		case <-d.workers.done:
			l.workerDone(ctx)
		case <-d.kick: // a rollback recorded (rollback.go)
			l.sched.at(timerSync, d.clock.Now())
		case <-d.clusterChanged: // the pods bound to the node changed
			l.sched.at(timerSync, d.clock.Now())
		case <-hup:
			d.log.Info("SIGHUP: re-scanning")
			l.rescan(ctx)
		case <-ctx.Done():
			<-pullsPublished // the status file is removed after its last write
			return d.shutdown()
		}
	}
}

// loop is what Run's loop keeps between its events: the timers, the files
// being written, the back-off of a sync retried.
type loop struct {
	d       *Daemon
	sched   *schedule
	settle  map[string]time.Time // files being written, until when
	backoff time.Duration        // before a sync the runtime did not answer is retried
	listed  time.Time            // the last listing for the pod metrics
	// logGC and imageGC have the collectors run (collectLogs,
	// collectImages); a collection asked for while one runs is dropped.
	logGC, imageGC chan struct{}
}

// newLoop schedules the daemon's timers at now, after the first sync (a
// sync retried soon when that one should be).
func (d *Daemon) newLoop(now time.Time, retry bool) *loop {
	l := &loop{d: d, sched: newSchedule(), settle: map[string]time.Time{}, backoff: time.Second,
		logGC: make(chan struct{}, 1), imageGC: make(chan struct{}, 1)}
	l.sched.every(timerResync, now.Add(d.o.Resync), d.o.Resync)
	l.sched.every(timerLogGC, now, logGCPeriod)
	l.sched.every(timerImageGC, now, imageGCPeriod)
	if retry {
		l.sched.at(timerSync, now.Add(l.backoff))
	}
	l.wake()
	return l
}

// event schedules the sync a change in the watched directories asks for.
func (l *loop) event(ev fsnotify.Event) {
	d, now := l.d, l.d.clock.Now()
	if filepath.Dir(ev.Name) == d.o.ImagesDir && d.o.ImagesDir != "" {
		if isArchive(filepath.Base(ev.Name)) {
			l.sched.at(timerSync, now.Add(2*d.o.Settle)) // imported once left alone for Settle
		}
		return
	}
	if !manifest.IsManifest(filepath.Base(ev.Name)) {
		return
	}
	if ev.Has(fsnotify.Write) {
		l.settle[ev.Name] = now.Add(d.o.Settle)
		l.sched.at(timerSync, l.settle[ev.Name])
		return
	}
	if _, writing := l.settle[ev.Name]; !writing {
		l.sched.at(timerSync, now.Add(quick))
	}
}

// fire does what timer name is for.
func (l *loop) fire(ctx context.Context, name timerName) {
	switch name {
	case timerSync:
		now := l.d.clock.Now()
		if l.d.sync(ctx, l.writing(now)) {
			l.sched.at(timerSync, now.Add(l.backoff))
			l.backoff = min(2*l.backoff, l.d.o.Resync)
		} else {
			l.backoff = time.Second
		}
		l.wake()
	case timerResync:
		l.rescan(ctx)
	case timerLogGC:
		poke(l.logGC)
	case timerImageGC:
		poke(l.imageGC)
	}
}

// rescan syncs all the sources.
func (l *loop) rescan(ctx context.Context) {
	l.d.sync(ctx, l.writing(l.d.clock.Now()))
	l.wake()
}

// workerDone publishes a worker's outcome.
func (l *loop) workerDone(ctx context.Context) {
	d := l.d
	d.publish()
	// The pod metrics: one listing a second at most, however many
	// workers finish (50 pods started at once).
	if d.clock.Since(l.listed) >= time.Second {
		l.listed = d.clock.Now()
		if pods, err := d.h.Pods(ctx); err == nil {
			d.metrics.setPods(d.owned(pods))
			d.observeStatic(pods)
		}
	}
	l.wake()
}

// wake schedules a sync for when the pull back-off of a pod's image ends:
// the pod is tried again then.
func (l *loop) wake() {
	if at := l.d.h.Images().NextRetry(); !at.IsZero() {
		l.sched.at(timerSync, at)
	}
	// And when an update held back may go ahead (updates.go).
	if at := l.d.updates.nextSync(); !at.IsZero() {
		l.sched.at(timerSync, at)
	}
}

// writing returns the files still being written at now (their settle time
// is not over), scheduling a sync for when each is; it forgets settled
// files.
func (l *loop) writing(now time.Time) map[string]bool {
	busy := map[string]bool{}
	for f, until := range l.settle {
		if until.After(now) {
			busy[f] = true
			l.sched.at(timerSync, until)
		} else {
			delete(l.settle, f)
		}
	}
	return busy
}

// poke asks a collector to run, unless it has been asked already.
func poke(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// sync applies the sources once; it returns true when it should be retried
// soon (the runtime did not answer).
func (d *Daemon) sync(ctx context.Context, settling map[string]bool) (retry bool) {
	start := d.clock.Now()
	defer func() { d.metrics.observeSync(d.clock.Since(start), retry) }()
	imageProblems := d.importImages(ctx) // before the pods that need them start
	wants, broken, problems := d.src.Scan(ctx, settling)
	grace, problems := d.addCluster(wants, broken, problems)
	d.kept.set(wants)
	problems = append(problems, imageProblems...)
	if d.interrupted(ctx) {
		return false
	}
	d.logProblems(problems)
	pods, err := d.h.Pods(ctx)
	if d.interrupted(ctx) {
		return false
	}
	if err != nil {
		d.log.Error("container runtime unavailable; retrying", "err", err)
		d.health.set(false, "container runtime unavailable: "+err.Error())
		d.writeStatus(Status{Problems: problems})
		return true
	}
	d.syncJobs(ctx, broken) // before dispatch, which prunes the pods of no source and no Job
	d.dispatch(ctx, wants, broken, grace, pods)
	d.observeStatic(pods)
	d.pub.setProblems(problems)
	d.health.set(true, "")
	d.publish()
	d.metrics.setPods(d.owned(pods))
	return false
}

// interrupted reports, and logs, a sync that the shutdown (SIGTERM) cut
// short: its errors are the shutdown's, not a source's or the runtime's.
func (d *Daemon) interrupted(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	d.log.Info("sync interrupted by the shutdown")
	return true
}

// owned keeps the pods that come from the daemon's sources.
func (d *Daemon) owned(pods []*run.PodInfo) []*run.PodInfo {
	var out []*run.PodInfo
	for _, p := range pods {
		if d.src.Owns(p.Source) {
			out = append(out, p)
		}
	}
	return out
}

// addCluster adds the pods bound to the node (Options.Cluster) to wants:
// a static pod of the same namespace/name wins. Until the API server has
// answered, its source is broken: its pods on the node stay as they are.
// It returns the grace periods of the pods being deleted, by UID.
func (d *Daemon) addCluster(wants map[string]Want, broken map[string]bool, problems []Problem) (map[string]time.Duration, []Problem) {
	c := d.o.Cluster
	if c == nil {
		return nil, problems
	}
	pods, grace, msgs, synced := c.Wanted()
	src := c.Source()
	if !synced {
		broken[src] = true
	}
	for _, m := range msgs {
		problems = append(problems, Problem{Source: src, Msg: m})
	}
	for _, p := range pods {
		if first, ok := wants[p.Key()]; ok {
			problems = append(problems, Problem{Source: src,
				Msg: fmt.Sprintf("pod %s bound to this node is also defined in %s, which wins", p.Key(), first.Source)})
			continue
		}
		wants[p.Key()] = Want{Pod: p, Source: src}
	}
	return grace, problems
}

// dispatch hands every pod the sources want, and every pod of theirs no
// source wants any more, to its worker (run.SyncPod: the pod is created,
// kept, adopted, replaced or removed under its lock); a pod removed goes
// with its grace, when grace has one for it (a deleted API pod's).
func (d *Daemon) dispatch(ctx context.Context, wants map[string]Want, broken map[string]bool, grace map[string]time.Duration, pods []*run.PodInfo) {
	keys := make([]string, 0, len(wants))
	sources := map[string]string{}
	for k, w := range wants {
		keys = append(keys, k)
		sources[k] = w.Source
	}
	sort.Strings(keys)
	w := run.Want{Owns: func(p *run.PodInfo) bool { return d.src.Owns(p.Source) && !d.jobPod(p) }, Broken: broken, Prune: true, Grace: grace}
	var rolledBack []Rollback
	var static []*manifest.Pod
	deadlines := map[string]*int32{}
	stage, hold := map[string]*manifest.Pod{}, map[string]bool{}
	d.updates.beginSync()
	for _, k := range keys {
		deadlines[k] = wants[k].ProgressDeadline
		if d.src.API != "" && sources[k] == d.src.API {
			// The API server's pod is the one run: no rollback (its
			// controller rolls out; its UID is its identity).
			w.Pods = append(w.Pods, wants[k].Pod)
			continue
		}
		// A version a rollback or an undo went back to stands in for the
		// file's while the file asks for the version it replaced.
		p, o, err := d.overridden(wants[k].Pod)
		if err != nil {
			d.log.Warn("reading the pod's rollback", "pod", k, "err", err)
		}
		if o != nil && o.Reason != "" {
			rolledBack = append(rolledBack, Rollback{Pod: k, Source: sources[k], Revision: o.To.Revision, Reason: o.Reason, Message: o.Message})
		}
		// A changed version that would replace a running pod waits for
		// its window and lock (updates.go); a rollback's or an undo's
		// version never does.
		if old := replaced(p, pods, w.Owns); o == nil && old != nil && !d.holdUpdate(p, sources[k], old).Apply {
			stage[k] = p
			if in := d.standIn(k, old, p); in != nil {
				p = in
			} else {
				hold[k] = true // the worker only pulls: the pod there stays
			}
		}
		w.Pods = append(w.Pods, p)
		static = append(static, p)
	}
	d.updates.keep(func(k string) bool { return stage[k] != nil })
	d.pub.setWanted(sources, rolledBack)
	d.static = static
	d.watches.keep(func(k string) bool { _, ok := wants[k]; return ok }) // not the pods of no source
	for _, k := range append(w.Others(pods), keys...) {
		d.workers.update(ctx, k, job{want: w, snapshot: pods, deadline: deadlines[k], stage: stage[k], hold: hold[k]})
	}
}

// syncPod is one change of a pod by its worker (ctx ends when it is made
// moot, life when the daemon stops); its outcome is logged.
func (d *Daemon) syncPod(ctx, life context.Context, key string, j job) []run.Result {
	if j.stage != nil {
		if rs := d.stage(ctx, key, j.stage); rs != nil || j.hold {
			return rs
		}
	}
	opts := run.UpOptions{Wait: run.WaitRunning, Foreground: true, Timeout: d.o.PodTimeout, PullBackOff: true, RecordRefusals: true, RecordConfigErrors: true, RecordFailures: true, RetryStartErrors: true}
	rs := d.h.SyncPod(ctx, key, j.want, opts, j.snapshot)
	for _, r := range rs {
		perr := (*images.PullError)(nil)
		switch {
		case r.Err != nil && ctx.Err() != nil:
			// the shutdown stopped it; sync says so once
		case r.Action == run.Removed && d.src.API != "" && sourceOf(j.snapshot, r.UID) == d.src.API:
			d.log.Info("stopping pod: deleted from the API server", "pod", r.Pod, "uid", r.UID)
			if r.Err != nil {
				d.log.Error("stopping pod", "pod", r.Pod, "err", r.Err)
			}
		case r.Action == run.Removed:
			d.log.Info("stopping pod: its manifest is gone", "pod", r.Pod, "uid", r.UID)
			if r.Err != nil {
				d.log.Error("stopping pod", "pod", r.Pod, "err", r.Err)
			}
		case errors.As(r.Err, &perr):
			d.log.Warn("pod waiting for its image", "pod", r.Pod, "reason", perr.Reason, "image", perr.Image, "message", perr.Err.Error())
		case errors.Is(r.Err, run.ErrKeptFailed):
			d.log.Warn("pod failed while starting; Failed until its manifest changes", "pod", r.Pod, "err", r.Err)
		case r.Err != nil:
			d.log.Error("starting pod; retrying at the next re-scan", "pod", r.Pod, "err", r.Err)
		case r.Action == run.Refused:
			d.log.Warn("pod refused by the node; Failed until its manifest changes", "pod", r.Pod,
				"reason", r.Refusal.Reason, "message", r.Refusal.Message)
		case r.Action != run.Unchanged:
			d.log.Info("pod "+string(r.Action), "pod", r.Pod, "phase", r.Phase)
		}
		if ctx.Err() == nil && (r.Action == run.Replaced || r.Action == run.Unchanged) && !d.fromCluster(j.want, key) {
			// A new version (or one adopted before it got Ready) is watched
			// until Ready, and rolled back if it fails (rollback.go): also
			// one that failed while starting and is kept listed (a failed
			// init container, a configuration error); one not on the node
			// (its image not pulled: the old one runs) ends the watch.
			for _, p := range j.want.Pods {
				if p.Key() == key && p.UID == r.UID {
					// The watch outlives this change: it ends with the daemon.
					d.watchProgress(life, p, j.deadline)
				}
			}
		}
	}
	return rs
}

// publish writes the status file: the last sync's problems, the pods that
// failed to start, and those waiting for an image (tried again with the
// kubelet's image back-off), from each pod's latest outcome.
func (d *Daemon) publish() {
	problems, sources, rolledBack := d.pub.get()
	latest := d.workers.results(func(key string) bool { _, ok := sources[key]; return ok })
	keys := make([]string, 0, len(latest))
	for k := range latest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var waiting []Waiting
	for _, k := range keys {
		for _, r := range latest[k] {
			if perr := (*images.PullError)(nil); errors.As(r.Err, &perr) {
				waiting = append(waiting, Waiting{Pod: r.Pod, Source: sources[r.Pod], Phase: string(r.Phase),
					Reason: perr.Reason, Image: perr.Image, Message: perr.Err.Error()})
			} else if r.Err != nil && r.Action != run.Removed {
				problems = append(problems, Problem{Source: r.Pod, Msg: r.Err.Error()})
			}
		}
	}
	d.writeStatus(Status{Problems: problems, Waiting: waiting, RolledBack: rolledBack, Pending: d.updates.pending()})
}

func (d *Daemon) shutdown() error {
	defer os.Remove(d.o.StatusFile)
	// In-flight changes end first: creates are cancelled (and undone),
	// removals finish (a teardown is never cancelled half-way).
	d.workers.wait()
	d.jobRuns.stopAll()
	if d.o.StopPodsOnExit {
		d.log.Info("stopping pods before exit")
		return d.h.TerminateAll(context.Background())
	}
	d.log.Info("exiting; pods keep running")
	d.h.StopSupervising()
	return nil
}

// Waiting is a pod that could not start for its image, as the kubelet
// shows it: Pending, with its containers' waiting reason (ErrImagePull at a
// failed pull, ImagePullBackOff until the next one, ErrImageNeverPull,
// InvalidImageName) and the registry's message.
type Waiting struct {
	Pod     string `json:"pod"` // namespace/name
	Source  string `json:"source"`
	Phase   string `json:"phase"`
	Reason  string `json:"reason"`
	Image   string `json:"image"`
	Message string `json:"message"`
}

// logProblems logs the problems of each source whose problems changed
// since they were last logged.
func (d *Daemon) logProblems(problems []Problem) {
	now := map[string]string{}
	for _, p := range problems {
		now[p.Source] += p.Msg + "\n"
	}
	for _, p := range problems {
		if d.logged[p.Source] != now[p.Source] {
			d.log.Error("manifest not applied; its pods keep running as last applied", "source", p.Source, "problem", p.Msg)
		}
	}
	d.logged = now
}

// writeStatus publishes the daemon's state, readable by root only (it
// names every problem, and the URL even redacted says where pods come
// from).
func (d *Daemon) writeStatus(st Status) {
	st.PID, st.ManifestDir, st.URL, st.API, st.Updated = os.Getpid(), d.o.ManifestDir, d.src.URLName(), d.src.API, d.clock.Now().UTC()
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	d.written = st
	d.write(st)
}

// rewriteStatus writes the status last written again (Updated stays the
// time of its sync), with the pulls under way now.
func (d *Daemon) rewriteStatus() {
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	if d.written.PID == 0 {
		return // none yet: the first sync's writes it, with the pulls
	}
	d.write(d.written)
}

// write writes st with the pulls under way to the status file; the caller
// holds statusMu.
func (d *Daemon) write(st Status) {
	if d.o.Pulls != nil {
		st.Pulls = d.o.Pulls.List()
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(d.o.StatusFile), 0o700)
	}
	if err == nil {
		err = atomicfile.WriteFile(d.o.StatusFile, data, 0o600)
	}
	if err != nil {
		d.log.Warn("writing the status file", "err", err)
	}
}

func (d *Daemon) notify(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		d.log.Warn("sd_notify", "err", err)
	}
}

// watchdog pings systemd's watchdog while the daemon is alive.
func (d *Daemon) watchdog(ctx context.Context) {
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil || interval == 0 {
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			d.notify(sd.SdNotifyWatchdog)
		case <-ctx.Done():
			return
		}
	}
}

// collectLogs removes the logs of pods that are gone (Options.LogRetention)
// whenever due says (timerLogGC), until ctx ends.
func (d *Daemon) collectLogs(ctx context.Context, due <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-due:
		}
		removed, err := d.h.CollectLogs(ctx, d.o.LogRetention)
		for _, dir := range removed {
			d.log.Info("removed the logs of a pod that is gone", "dir", dir)
		}
		if err != nil && ctx.Err() == nil {
			d.log.Warn("collecting the logs of pods that are gone", "err", err)
		}
	}
}

// collectImages runs the image GC whenever due says (timerImageGC: after
// the first sync, when the images the sources want are known, and every
// imageGCPeriod), until ctx ends.
func (d *Daemon) collectImages(ctx context.Context, due <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-due:
		}
		removed, err := d.h.ImageCollector().Collect(ctx, imagegc.Collection{Policy: d.o.ImageGC, Keep: d.kept.get()})
		for _, ref := range removed {
			d.log.Info("removed an unused image", "image", ref)
		}
		if err != nil && ctx.Err() == nil {
			d.log.Warn("image garbage collection", "err", err)
		}
	}
}

// fromCluster reports whether the pod w wants under key is the API
// server's (Options.Cluster): no rollback watches it.
func (d *Daemon) fromCluster(w run.Want, key string) bool {
	for _, p := range w.Pods {
		if p.Key() == key {
			return d.src.API != "" && p.Source.Origin() == d.src.API
		}
	}
	return false
}

// sourceOf is the source of pod uid in pods ("" when not there).
func sourceOf(pods []*run.PodInfo, uid string) string {
	for _, p := range pods {
		if p.UID == uid {
			return p.Source
		}
	}
	return ""
}
