package run

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

type trace struct {
	mu  sync.Mutex
	ops []string
}

func (t *trace) add(s string) { t.mu.Lock(); t.ops = append(t.ops, s); t.mu.Unlock() }

func step(t *trace, name string, fail bool) Step {
	return Step{
		Name: name,
		Do: func(context.Context) error {
			t.add("do " + name)
			if fail {
				return errors.New("boom")
			}
			return nil
		},
		Undo: func(context.Context) error { t.add("undo " + name); return nil },
	}
}

func TestExecuteUndoesCompletedStepsInReverse(t *testing.T) {
	for k := 0; k < 4; k++ {
		tr := &trace{}
		var steps []Step
		for i, n := range []string{"a", "b", "c", "d"} {
			steps = append(steps, step(tr, n, i == k))
		}
		err := Execute(context.Background(), clock.RealClock{}, "ns/p", steps, false, func(Event) {})
		var serr *StepError
		if !errors.As(err, &serr) || serr.Step != steps[k].Name {
			t.Fatalf("k=%d: err = %v", k, err)
		}
		var want []string
		for i := 0; i <= k; i++ {
			want = append(want, "do "+steps[i].Name)
		}
		for i := k; i >= 0; i-- { // the failed step's undo too: it may have half succeeded
			want = append(want, "undo "+steps[i].Name)
		}
		if !reflect.DeepEqual(tr.ops, want) {
			t.Errorf("k=%d: ops = %v, want %v", k, tr.ops, want)
		}
	}
}

func TestExecuteKeepOnFailureSkipsUndo(t *testing.T) {
	tr := &trace{}
	steps := []Step{step(tr, "a", false), step(tr, "b", true)}
	_ = Execute(context.Background(), clock.RealClock{}, "ns/p", steps, true, func(Event) {})
	if want := []string{"do a", "do b"}; !reflect.DeepEqual(tr.ops, want) {
		t.Fatalf("ops = %v, want %v", tr.ops, want)
	}
}

func TestUndoRunsOnFreshContextAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var undoCtxErr error
	steps := []Step{
		{Name: "a", Do: func(context.Context) error { return nil }, Undo: func(c context.Context) error { undoCtxErr = c.Err(); return nil }},
		{Name: "b", Do: func(context.Context) error { cancel(); return context.Canceled }},
	}
	_ = Execute(ctx, clock.RealClock{}, "ns/p", steps, false, func(Event) {})
	if undoCtxErr != nil {
		t.Fatalf("undo ran on a cancelled context: %v", undoCtxErr)
	}
}

// TestExecuteTimesStepsOnItsClock: the elapsed times reported, of steps and
// of their undos, are the clock's that Execute is given.
func TestExecuteTimesStepsOnItsClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	takes := func(d time.Duration, err error) func(context.Context) error {
		return func(context.Context) error { clk.Step(d); return err }
	}
	steps := []Step{
		{Name: "a", Do: takes(3*time.Second, nil), Undo: takes(time.Second, nil)},
		{Name: "b", Do: takes(5*time.Second, errors.New("boom"))},
	}
	elapsed := map[string]time.Duration{}
	_ = Execute(context.Background(), clk, "ns/p", steps, false, func(e Event) { elapsed[e.Step] = e.Elapsed })
	want := map[string]time.Duration{"a": 3 * time.Second, "b": 5 * time.Second, "undo a": time.Second}
	if !reflect.DeepEqual(elapsed, want) {
		t.Errorf("elapsed %v, want %v", elapsed, want)
	}
}
