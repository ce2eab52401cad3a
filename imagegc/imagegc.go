// Package imagegc collects the node's unused images, as the kubelet's image
// garbage collector (pkg/kubelet/images/image_gc_manager.go): Plan and
// Unused decide which to remove (pure, no I/O); a Collector removes them
// from the runtime, never one a container uses, one wanted, or one a pod
// being made holds (Holds; LocalHolds within one process, lock.Images
// across processes).
package imagegc

import (
	"sort"
	"time"
)

// Policy is the kubelet's image GC policy.
type Policy struct {
	HighPercent int           // imageGCHighThresholdPercent: above it, collect
	LowPercent  int           // imageGCLowThresholdPercent: collect down to it
	MinAge      time.Duration // imageMinimumGCAge: never an image younger
}

// DefaultPolicy is the kubelet's: 85 %, 80 %, 2 minutes.
var DefaultPolicy = Policy{HighPercent: 85, LowPercent: 80, MinAge: 2 * time.Minute}

// Image is an image as the collector sees it.
type Image struct {
	Ref      string
	Size     int64
	Created  time.Time // when it came to the node
	LastUsed time.Time // the newest container made from it; zero when none
	InUse    bool      // a container (running or not) or a wanted pod uses it
}

// Usage is the image filesystem's use.
type Usage struct{ Used, Capacity int64 }

// Plan returns the images to remove, in order: nothing while the image
// filesystem is below HighPercent; above it, images not in use, least
// recently used first (never used: the oldest first), none younger than
// MinAge, until LowPercent would be reached.
func Plan(imgs []Image, u Usage, p Policy, now time.Time) []Image {
	if u.Capacity <= 0 || u.Used*100 < int64(p.HighPercent)*u.Capacity {
		return nil
	}
	toFree := u.Used - int64(p.LowPercent)*u.Capacity/100
	var out []Image
	for _, img := range candidates(imgs, p.MinAge, now) {
		if toFree <= 0 {
			break
		}
		out = append(out, img)
		toFree -= img.Size
	}
	return out
}

// Unused returns every image not in use and at least minAge old, least
// recently used first (`podrun image prune -a`).
func Unused(imgs []Image, minAge time.Duration, now time.Time) []Image {
	return candidates(imgs, minAge, now)
}

func candidates(imgs []Image, minAge time.Duration, now time.Time) []Image {
	var out []Image
	for _, img := range imgs {
		if !img.InUse && now.Sub(img.Created) >= minAge {
			out = append(out, img)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.LastUsed.Equal(b.LastUsed) {
			return a.LastUsed.Before(b.LastUsed)
		}
		return a.Created.Before(b.Created)
	})
	return out
}
