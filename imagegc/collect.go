package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/imagegc"
)

// ImageGC is one image collection: the policy, or All (every unused image,
// `image prune -a`), and the images wanted besides those containers use
// (pods wanted that are not running yet).
type ImageGC struct {
	Policy imagegc.Policy
	All    bool
	Keep   []string
}

// CollectImages removes images as the kubelet's image GC does (imagegc):
// never an image a container of the node uses (running or not), one in
// o.Keep, or one a pod being made holds (by any podrun: ImageHolds). It
// returns the references it removed.
func (h *Host) CollectImages(ctx context.Context, o ImageGC) (removed []string, err error) {
	err = h.imageHolds.Collect(ctx, func(held []string) error {
		o.Keep = append(slices.Clip(o.Keep), held...)
		removed, err = h.collectImages(ctx, o)
		return err
	})
	return removed, err
}

// collectImages is CollectImages while no hold is taken.
func (h *Host) collectImages(ctx context.Context, o ImageGC) ([]string, error) {
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
	var all []imagegc.Image
	for _, i := range imgs {
		all = append(all, imagegc.Image{Ref: i.Ref, Size: max(i.Size, 0), Created: i.CreatedAt, LastUsed: lastUsed[i.Ref], InUse: inUse[i.Ref]})
	}
	now := h.clock.Now()
	var plan []imagegc.Image
	if o.All {
		plan = imagegc.Unused(all, o.Policy.MinAge, now)
	} else {
		dir, err := h.engine.ImageFS(ctx)
		if err != nil {
			return nil, err
		}
		u, err := fsUsage(dir)
		if err != nil {
			return nil, err
		}
		plan = imagegc.Plan(all, u, o.Policy, now)
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

// fsUsage is the use of the filesystem holding dir, as df counts it.
func fsUsage(dir string) (imagegc.Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return imagegc.Usage{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := int64(st.Bsize) // int32 on 32-bit arm
	return imagegc.Usage{Used: int64(st.Blocks-st.Bfree) * bs, Capacity: int64(st.Blocks) * bs}, nil
}
