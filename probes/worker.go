package probes

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Kind is the kind of a probe.
type Kind string

// Probe kinds.
const (
	Startup   Kind = "startup"
	Liveness  Kind = "liveness"
	Readiness Kind = "readiness"
)

// Update reports a change of a probe's thresholded state.
type Update struct {
	Kind        Kind
	ContainerID string
	Result      Result  // Success or Failure, after thresholds
	Outcome     Outcome // the last attempt
}

// Worker probes one container with one probe and applies the thresholds.
type Worker struct {
	kind    Kind
	probe   corev1.Probe // with defaults applied
	target  Target
	clock   clock.Clock
	updates chan<- Update
	run     func(context.Context, *corev1.Probe, Target) Outcome

	mu         sync.Mutex
	state      Result // Unknown until the first determination
	last       Outcome
	lastResult Result // of the last counted attempt
	resultRun  int    // consecutive attempts with lastResult
}

// NewWorker prepares a worker for one probe of one container. Like the
// kubelet's results manager it sends on updates only the first
// determination and then each change of the thresholded state. The send
// blocks until received or Run's ctx ends, so updates should be drained
// (or buffered).
func NewWorker(kind Kind, p *corev1.Probe, t Target, clk clock.Clock, updates chan<- Update) *Worker {
	w := &Worker{kind: kind, target: t, clock: clk, updates: updates, run: Probe}
	if p != nil {
		w.probe = *p
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	if w.probe.PeriodSeconds <= 0 {
		w.probe.PeriodSeconds = DefaultPeriodSeconds
	}
	if w.probe.TimeoutSeconds <= 0 {
		w.probe.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if w.probe.SuccessThreshold <= 0 {
		w.probe.SuccessThreshold = DefaultSuccessThreshold
	}
	if w.probe.FailureThreshold <= 0 {
		w.probe.FailureThreshold = DefaultFailureThreshold
	}
	return w
}

// Run probes until ctx ends: it waits initialDelaySeconds, then probes every
// periodSeconds (measured start to start). successThreshold consecutive
// successes make the state Success, failureThreshold consecutive failures
// make it Failure; attempts with an Unknown result (the probe could not be
// run) are discarded, as the kubelet does.
//
// Run returns early, like the kubelet puts its worker on hold, once the
// container is to be killed or its probing is over: a liveness worker after
// reporting Failure, a startup worker after reporting Success or Failure.
// A restarted container (new container ID) gets a new Worker.
func (w *Worker) Run(ctx context.Context) {
	if w.probe.InitialDelaySeconds > 0 {
		if !w.wait(ctx, time.Duration(w.probe.InitialDelaySeconds)*time.Second) {
			return
		}
	}
	period := time.Duration(w.probe.PeriodSeconds) * time.Second
	for {
		start := w.clock.Now()
		out := w.run(ctx, &w.probe, w.target)
		if ctx.Err() != nil {
			return
		}
		if w.target.Observe != nil {
			w.target.Observe(w.kind, out, w.clock.Since(start))
		}
		result, changed := w.record(out)
		if changed {
			u := Update{Kind: w.kind, ContainerID: w.target.ContainerID, Result: result, Outcome: out}
			select {
			case w.updates <- u:
			case <-ctx.Done():
				return
			}
		}
		if result != Unknown && (w.kind == Startup || (w.kind == Liveness && result == Failure)) {
			return
		}
		if !w.wait(ctx, period-w.clock.Since(start)) {
			return
		}
	}
}

// record counts an attempt and returns the thresholded result it determines
// (Unknown when below a threshold) and whether that is news.
func (w *Worker) record(out Outcome) (Result, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = out
	if out.Result != Success && out.Result != Failure {
		return Unknown, false
	}
	if out.Result == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = out.Result, 1
	}
	threshold := int(w.probe.FailureThreshold)
	if out.Result == Success {
		threshold = int(w.probe.SuccessThreshold)
	}
	if w.resultRun < threshold {
		return Unknown, false
	}
	changed := w.state != out.Result
	w.state = out.Result
	return out.Result, changed
}

func (w *Worker) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-w.clock.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}
