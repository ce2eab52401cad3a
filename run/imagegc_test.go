package run

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/imagegc"
)

// TestCollectImages: image GC never removes an image a container uses
// (running or not), one the daemon still wants, or one younger than the
// minimum age; -a removes every other one; the policy removes nothing
// while the image filesystem is below its high threshold.
func TestCollectImages(t *testing.T) {
	e := fake.New()
	now := time.Now()
	for _, img := range []engine.Image{
		{Ref: "podrun.test/used:1"}, {Ref: "podrun.test/wanted:1"}, {Ref: "podrun.test/old:1"},
		{Ref: "podrun.test/young:1", CreatedAt: now},
	} {
		e.AddImage(img)
	}
	if err := e.Create(context.Background(), engine.ContainerSpec{ID: "c1", Image: "podrun.test/used:1"}); err != nil {
		t.Fatal(err)
	}
	h := NewHost(Config{Root: t.TempDir(), LogDir: t.TempDir()}, Deps{Engine: e}, nil, nil)
	p := imagegc.Policy{HighPercent: 100, LowPercent: 100, MinAge: time.Minute}
	if removed, err := h.CollectImages(context.Background(), ImageGC{Policy: p}); err != nil || len(removed) != 0 {
		t.Errorf("below the threshold: removed %v, %v", removed, err)
	}
	removed, err := h.CollectImages(context.Background(), ImageGC{Policy: p, All: true, Keep: []string{"podrun.test/wanted:1"}})
	if err != nil || !slices.Equal(removed, []string{"podrun.test/old:1"}) {
		t.Errorf("-a: removed %v, %v; want only old", removed, err)
	}
	imgs, _ := e.Images(context.Background())
	if len(imgs) != 3 {
		t.Errorf("images left %v, want used, wanted and young", imgs)
	}
}

// TestImageGCKeepsImagesOfPodsBeingMade: an image a pod being made (by
// another process) has made present, but that no container uses yet, is
// not collected: the pod holds it (ImageHolds) from before its images step
// until its containers are made; afterwards its container keeps it.
func TestImageGCKeepsImagesOfPodsBeingMade(t *testing.T) {
	tp := newTwoProcesses(t)
	holds := &localHolds{}
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
	removed, err := gc.CollectImages(ctx, ImageGC{All: true})
	close(release)
	if r := (<-res)[0]; r.Err != nil {
		t.Fatalf("up: %v", r.Err)
	}
	if err != nil || len(removed) != 0 {
		t.Errorf("GC removed %v (%v) while a pod being made held it", removed, err)
	}
	if removed, err := gc.CollectImages(ctx, ImageGC{All: true}); err != nil || len(removed) != 0 {
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
