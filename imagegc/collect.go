package imagegc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/ctrd"
)

// Collection is one image collection: the policy, or All (every unused image,
// `image prune -a`), and the images wanted besides those containers use
// (pods wanted that are not running yet).
type Collection struct {
	Policy Policy
	All    bool
	Keep   []string
}

// CollectImages removes images as the kubelet's image GC does (imagegc):
// never an image a container of the node uses (running or not), one in
// o.Keep, or one a pod being made holds (by any podrun: ImageHolds). It
// returns the references it removed.
func (h *Collector) CollectImages(ctx context.Context, o Collection) (removed []string, err error) {
	err = h.imageHolds.Collect(ctx, func(held []string) error {
		o.Keep = append(slices.Clip(o.Keep), held...)
		removed, err = h.collectImages(ctx, o)
		return err
	})
	return removed, err
}

// collectImages is CollectImages while no hold is taken.
func (h *Collector) collectImages(ctx context.Context, o Collection) ([]string, error) {
	imgs, err := h.engine.Images(ctx)
	if err != nil {
		return nil, err
	}
	ctrs, err := h.engine.List(ctx, nil)
	if err != nil {
		return nil, err
	}
	inUse, lastUsed := map[string]bool{}, map[string]time.Time{}
	for _, c := range ctrs {
		if c.Image == "" {
			continue
		}
		inUse[c.Image] = true
		if c.CreatedAt.After(lastUsed[c.Image]) {
			lastUsed[c.Image] = c.CreatedAt
		}
	}
	for _, ref := range o.Keep {
		if n, err := ctrd.Normalize(ref); err == nil {
			inUse[n] = true
		}
	}
	var all []Image
	for _, i := range imgs {
		all = append(all, Image{Ref: i.Ref, Size: max(i.Size, 0), Created: i.CreatedAt, LastUsed: lastUsed[i.Ref], InUse: inUse[i.Ref]})
	}
	now := h.clock.Now()
	var plan []Image
	if o.All {
		plan = Unused(all, o.Policy.MinAge, now)
	} else {
		dir, err := h.engine.ImageFS(ctx)
		if err != nil {
			return nil, err
		}
		u, err := fsUsage(dir)
		if err != nil {
			return nil, err
		}
		plan = Plan(all, u, o.Policy, now)
	}
	var removed []string
	var errs []error
	for _, img := range plan {
		if err := h.engine.RemoveImage(ctx, img.Ref); err != nil {
			errs = append(errs, fmt.Errorf("removing image %s: %w", img.Ref, err))
			continue
		}
		removed = append(removed, img.Ref)
	}
	return removed, errors.Join(errs...)
}

// Collector removes images: the engine's, kept away from the images held.
type Collector struct {
	engine     engine.Engine
	imageHolds Holds
	clock      interface{ Now() time.Time }
}

// NewCollector is a Collector of e's images, away from those holds hold,
// on clock.
func NewCollector(e engine.Engine, holds Holds, clock interface{ Now() time.Time }) *Collector {
	return &Collector{engine: e, imageHolds: holds, clock: clock}
}

// fsUsage is the use of the filesystem holding dir, as df counts it.
func fsUsage(dir string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Usage{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := int64(st.Bsize) // int32 on 32-bit arm
	return Usage{Used: int64(st.Blocks-st.Bfree) * bs, Capacity: int64(st.Blocks) * bs}, nil
}
