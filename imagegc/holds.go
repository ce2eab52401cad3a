package run

import (
	"context"
	"slices"
	"sync"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
)

// holdImages keeps image collection away from pod p's images (and the
// pause image) until release: from before its pipeline makes them present
// (or finds them) until its containers, which then show them in use, are
// made.
func (h *Host) holdImages(ctx context.Context, p *manifest.Pod) (release func(), err error) {
	var refs []string
	for _, c := range resources.Containers(p.Pod) {
		if !slices.Contains(refs, c.Image) {
			refs = append(refs, c.Image)
		}
	}
	if h.cfg.PauseImage != "" {
		refs = append(refs, h.cfg.PauseImage)
	}
	return h.imageHolds.Hold(ctx, refs)
}

// localHolds hold images within this process only: the ImageHolds of a
// Host given none (tests, where hosts may share one).
type localHolds struct {
	mu    sync.Mutex
	holds map[*[]string]bool
}

func (l *localHolds) Hold(_ context.Context, refs []string) (func(), error) {
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

func (l *localHolds) Collect(_ context.Context, fn func(held []string) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var held []string
	for hold := range l.holds {
		held = append(held, *hold...)
	}
	return fn(held)
}
