package imagegc

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
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
	h := NewCollector(e, &LocalHolds{}, clock.RealClock{})
	p := Policy{HighPercent: 100, LowPercent: 100, MinAge: time.Minute}
	if removed, err := h.Collect(context.Background(), Collection{Policy: p}); err != nil || len(removed) != 0 {
		t.Errorf("below the threshold: removed %v, %v", removed, err)
	}
	removed, err := h.Collect(context.Background(), Collection{Policy: p, All: true, Keep: []string{"podrun.test/wanted:1"}})
	if err != nil || !slices.Equal(removed, []string{"podrun.test/old:1"}) {
		t.Errorf("-a: removed %v, %v; want only old", removed, err)
	}
	imgs, _ := e.Images(context.Background())
	if len(imgs) != 3 {
		t.Errorf("images left %v, want used, wanted and young", imgs)
	}
}

// TestCollectKeepsHeldImages: an image held (a pod being made uses it
// before any container does) is not removed; released, it is.
func TestCollectKeepsHeldImages(t *testing.T) {
	ctx := context.Background()
	e := fake.New()
	e.AddImage(engine.Image{Ref: "podrun.test/held:1"})
	holds := &LocalHolds{}
	c := NewCollector(e, holds, clock.RealClock{})
	release, err := holds.Hold(ctx, []string{"podrun.test/held:1"})
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := c.Collect(ctx, Collection{All: true}); err != nil || len(removed) != 0 {
		t.Errorf("held: removed %v, %v", removed, err)
	}
	release()
	if removed, err := c.Collect(ctx, Collection{All: true}); err != nil || !slices.Equal(removed, []string{"podrun.test/held:1"}) {
		t.Errorf("released: removed %v, %v; want it", removed, err)
	}
}

func TestInventory(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	imgs := []engine.Image{
		{Ref: "docker.io/library/a:1", Size: 10, CreatedAt: t0},
		{Ref: "docker.io/library/b:1", Size: -1, CreatedAt: t0},
		{Ref: "docker.io/library/kept:1"},
	}
	for _, tc := range []struct {
		name string
		ctrs []engine.Container
		keep []string
		want []Image
	}{
		{"nothing uses them", nil, nil, []Image{
			{Ref: "docker.io/library/a:1", Size: 10, Created: t0}, {Ref: "docker.io/library/b:1", Created: t0}, {Ref: "docker.io/library/kept:1"}}},
		{"containers: in use, last used by the newest", []engine.Container{
			{ID: "c1", Image: "docker.io/library/a:1", CreatedAt: t0.Add(time.Hour)},
			{ID: "c2", Image: "docker.io/library/a:1", CreatedAt: t0.Add(2 * time.Hour)},
			{ID: "c3", Image: "docker.io/library/b:1", CreatedAt: t0.Add(time.Minute)},
			{ID: "c4"}, // no image (a pinned sandbox)
		}, nil, []Image{
			{Ref: "docker.io/library/a:1", Size: 10, Created: t0, LastUsed: t0.Add(2 * time.Hour), InUse: true},
			{Ref: "docker.io/library/b:1", Created: t0, LastUsed: t0.Add(time.Minute), InUse: true},
			{Ref: "docker.io/library/kept:1"}}},
		{"kept as written: normalized", nil, []string{"kept:1", "::not a reference"}, []Image{
			{Ref: "docker.io/library/a:1", Size: 10, Created: t0}, {Ref: "docker.io/library/b:1", Created: t0},
			{Ref: "docker.io/library/kept:1", InUse: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Inventory(imgs, tc.ctrs, tc.keep); !slices.Equal(got, tc.want) {
				t.Errorf("Inventory =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
