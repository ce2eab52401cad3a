// The step pipeline: named steps run in order, each with its undo, the
// done ones undone in reverse at the first failure (Execute); the
// combinators that make steps of actions (both, then, inOrder); the bound
// of each step of a teardown.

package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// Step is one named stage of a pod's pipeline.
type Step struct {
	Name string
	Do   func(ctx context.Context) error
	// Undo reverts Do, also a Do that half succeeded or did not run: it is
	// registered before Do runs, so it must be idempotent ("already gone"
	// or "never made" is success). It may be nil.
	Undo func(ctx context.Context) error
}

// Event is progress reported while a pipeline runs.
type Event struct {
	Pod     string // namespace/name
	Step    string
	Index   int // 1-based; 0 for messages outside the pipeline
	Total   int
	Elapsed time.Duration
	Err     error
	Msg     string
}

// Reporter receives progress. It must be safe for concurrent use.
type Reporter func(Event)

// StepError is a failed step, after its pipeline has been undone.
type StepError struct {
	Pod  string
	Step string
	Err  error
	// UndoErr is what went wrong while undoing, if anything.
	UndoErr error
}

func (e *StepError) Error() string {
	s := fmt.Sprintf("pod %s: step %s: %v", e.Pod, e.Step, e.Err)
	if e.UndoErr != nil {
		s += fmt.Sprintf(" (undo: %v)", e.UndoErr)
	}
	return s
}

func (e *StepError) Unwrap() error { return e.Err }

// undoTimeout bounds the whole undo of a failed pipeline.
const undoTimeout = 2 * time.Minute

// Execute runs steps in order, until the first failure or until ctx ends
// (checked before each step). At the first failure it runs the Undo of
// the failed step and of every completed step, in reverse, on a fresh context (a cancelled request
// must not abort cleanup), unless keep is set. clk times the steps.
func Execute(ctx context.Context, clk clock.PassiveClock, pod string, steps []Step, keep bool, report Reporter) error {
	var done []Step
	for i, s := range steps {
		start := clk.Now()
		done = append(done, s) // before Do: a step can half succeed (CNI ADD)
		err := ctx.Err()       // a cancelled pipeline stops at the next step
		if err == nil {
			err = s.Do(ctx)
		}
		report(Event{Pod: pod, Step: s.Name, Index: i + 1, Total: len(steps), Elapsed: clk.Since(start), Err: err})
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w (%w)", err, ctx.Err())
			}
			serr := &StepError{Pod: pod, Step: s.Name, Err: err}
			if !keep {
				serr.UndoErr = undo(clk, done, pod, report)
			}
			return serr
		}
	}
	return nil
}

func undo(clk clock.PassiveClock, done []Step, pod string, report Reporter) error {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		if done[i].Undo == nil {
			continue
		}
		start := clk.Now()
		err := done[i].Undo(ctx)
		report(Event{Pod: pod, Step: "undo " + done[i].Name, Elapsed: clk.Since(start), Err: err})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", done[i].Name, err))
		}
	}
	return errors.Join(errs...)
}

// both runs two actions concurrently and returns both errors.
func both(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		errc := make(chan error, 1)
		go func() { errc <- a(ctx) }()
		errB := b(ctx)
		return errors.Join(<-errc, errB)
	}
}

// then runs b after a, when a succeeded.
func then(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := a(ctx); err != nil {
			return err
		}
		return b(ctx)
	}
}

// inOrder runs undo actions one after the other, all of them, joining errors.
func inOrder(fns ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, fn := range fns {
			errs = append(errs, fn(ctx))
		}
		return errors.Join(errs...)
	}
}

// teardownStep bounds each step of a teardown but the graceful stops,
// which their grace periods bound.
const teardownStep = time.Minute

// stepContext is one teardown step's context.
func stepContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, teardownStep)
}
