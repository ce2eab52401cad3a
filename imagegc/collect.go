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

// Runtime is what a Collector uses of the container runtime (engine.Engine
// is one).
type Runtime interface {
	Images(ctx context.Context) ([]engine.Image, error)
	// List lists the containers whose labels match (nil: every one).
	List(ctx context.Context, match map[string]string) ([]engine.Container, error)
	// ImageFS is a directory on the filesystem that holds the images.
	ImageFS(ctx context.Context) (string, error)
	RemoveImage(ctx context.Context, ref string) error
}

// Holds keep image collection, this process's and any other's, away from
// the images held (lock.Images).
type Holds interface {
	// Collect runs fn with the references held, while no hold is taken.
	Collect(ctx context.Context, fn func(held []string) error) error
}

// Collector removes the runtime's unused images, as the kubelet's image GC
// manager: Plan or Unused decides, the Collector does.
type Collector struct {
	runtime Runtime
	holds   Holds
	clock   interface{ Now() time.Time }
}

// NewCollector is a Collector of rt's images, away from those holds hold,
// on clock.
func NewCollector(rt Runtime, holds Holds, clock interface{ Now() time.Time }) *Collector {
	return &Collector{runtime: rt, holds: holds, clock: clock}
}

// Collect removes images as the kubelet's image GC does: never an image a
// container of the node uses (running or not), one in o.Keep, or one a pod
// being made holds (by any podrun: Holds). It returns the references it
// removed.
func (c *Collector) Collect(ctx context.Context, o Collection) (removed []string, err error) {
	err = c.holds.Collect(ctx, func(held []string) error {
		o.Keep = append(slices.Clip(o.Keep), held...)
		removed, err = c.collect(ctx, o)
		return err
	})
	return removed, err
}

// collect is Collect while no hold is taken.
func (c *Collector) collect(ctx context.Context, o Collection) ([]string, error) {
	imgs, err := c.runtime.Images(ctx)
	if err != nil {
		return nil, err
	}
	ctrs, err := c.runtime.List(ctx, nil)
	if err != nil {
		return nil, err
	}
	all := Inventory(imgs, ctrs, o.Keep)
	now := c.clock.Now()
	var plan []Image
	if o.All {
		plan = Unused(all, o.Policy.MinAge, now)
	} else {
		dir, err := c.runtime.ImageFS(ctx)
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
		if err := c.runtime.RemoveImage(ctx, img.Ref); err != nil {
			errs = append(errs, fmt.Errorf("removing image %s: %w", img.Ref, err))
			continue
		}
		removed = append(removed, img.Ref)
	}
	return removed, errors.Join(errs...)
}

// Inventory is the node's images as the collector sees them: in use when a
// container (running or not) is made from one or keep names it (as written:
// it is normalized), last used when the newest such container was made.
func Inventory(imgs []engine.Image, ctrs []engine.Container, keep []string) []Image {
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
	for _, ref := range keep {
		if n, err := ctrd.Normalize(ref); err == nil {
			inUse[n] = true
		}
	}
	var all []Image
	for _, i := range imgs {
		all = append(all, Image{Ref: i.Ref, Size: max(i.Size, 0), Created: i.CreatedAt, LastUsed: lastUsed[i.Ref], InUse: inUse[i.Ref]})
	}
	return all
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
