package imagegc

import (
	"context"
	"slices"
	"sync"
)

// Holds keep image collection, this process's and any other's, away from
// the images held (lock.Images).
type Holds interface {
	// Collect runs fn with the references held, while no hold is taken.
	Collect(ctx context.Context, fn func(held []string) error) error
}

// LocalHolds hold images within this process only: the ImageHolds of a
// Host given none (tests, where hosts may share one).
type LocalHolds struct {
	mu    sync.Mutex
	holds map[*[]string]bool
}

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

func (l *LocalHolds) Collect(_ context.Context, fn func(held []string) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var held []string
	for hold := range l.holds {
		held = append(held, *hold...)
	}
	return fn(held)
}
