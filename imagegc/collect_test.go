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
	if removed, err := h.CollectImages(context.Background(), Collection{Policy: p}); err != nil || len(removed) != 0 {
		t.Errorf("below the threshold: removed %v, %v", removed, err)
	}
	removed, err := h.CollectImages(context.Background(), Collection{Policy: p, All: true, Keep: []string{"podrun.test/wanted:1"}})
	if err != nil || !slices.Equal(removed, []string{"podrun.test/old:1"}) {
		t.Errorf("-a: removed %v, %v; want only old", removed, err)
	}
	imgs, _ := e.Images(context.Background())
	if len(imgs) != 3 {
		t.Errorf("images left %v, want used, wanted and young", imgs)
	}
}
