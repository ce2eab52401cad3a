package imagegc

import (
	"context"
	"slices"
	"sync"
)

// LocalHolds hold images within this process only (lock.Images holds them
// across processes): the image holds of a run.Host given none (tests,
// where hosts may share one).
type LocalHolds struct {
	mu    sync.Mutex
	holds map[*[]string]bool
}

// Hold records refs as in use until release.
func (l *LocalHolds) Hold(_ context.Context, refs []string) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds == nil {
		l.holds = map[*[]string]bool{}
	}
	hold := slices.Clone(refs)
	l.holds[&hold] = true
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.holds, &hold)
	}, nil
}

// Collect runs fn with the references held, while no hold is taken.
func (l *LocalHolds) Collect(_ context.Context, fn func(held []string) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var held []string
	for hold := range l.holds {
		held = append(held, *hold...)
	}
	return fn(held)
}
