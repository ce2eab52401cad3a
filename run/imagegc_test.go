package run

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/podrun/podrun/imagegc"
)

// TestImageGCKeepsImagesOfPodsBeingMade: an image a pod being made (by
// another process) has made present, but that no container uses yet, is
// not collected: the pod holds it (ImageHolds) from before its images step
// until its containers are made; afterwards its container keeps it.
func TestImageGCKeepsImagesOfPodsBeingMade(t *testing.T) {
	tp := newTwoProcesses(t)
	holds := &imagegc.LocalHolds{}
	host := func() *Host {
		d := tp.m.deps(tp.eng)
		d.Locks, d.ImageHolds = tp.locks, holds
		h := NewHost(tp.cfg, d, nil, nil)
		t.Cleanup(func() { _ = h.Close() })
		return h
	}
	up, gc := host(), host()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	tp.m.mu.Lock()
	tp.m.before = func(op string) error {
		if strings.HasPrefix(op, "cgroup.create") { // the step after the images
			once.Do(func() { close(reached); <-release })
		}
		return nil
	}
	tp.m.mu.Unlock()
	res := make(chan []Result, 1)
	go func() { res <- up.Up(ctx, simplePods(t, "1", "web"), UpOptions{Wait: WaitRunning}) }()
	<-reached
	removed, err := gc.ImageCollector().Collect(ctx, imagegc.Collection{All: true})
	close(release)
	if r := (<-res)[0]; r.Err != nil {
		t.Fatalf("up: %v", r.Err)
	}
	if err != nil || len(removed) != 0 {
		t.Errorf("GC removed %v (%v) while a pod being made held it", removed, err)
	}
	if removed, err := gc.ImageCollector().Collect(ctx, imagegc.Collection{All: true}); err != nil || len(removed) != 0 {
		t.Errorf("GC removed %v (%v) once the pod's container used it", removed, err)
	}
	if holds.Collect(ctx, func(held []string) error {
		if len(held) != 0 {
			t.Errorf("held once the pod is up: %v", held)
		}
		return nil
	}) != nil {
		t.Fatal("collect")
	}
}
