package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/podrun/podrun/manifest"
)

// Change is what one sync does to a workload's pods, by namespace/name:
// pods kept as they are, pods to create, old pods to remove (of an older
// template, or above the scale) and pods replaced under the same name (a
// StatefulSet's).
type Change struct {
	Keep, Create, Remove, Replace []string
}

// Waves orders a workload's change as its controller rolls it out: each
// wave is a set of pods acted on together, and a wave starts once the one
// before has ended, the pods it started Ready. A Deployment's rolling
// update creates up to maxSurge new pods above its replicas, then removes
// as many old ones as keep at least replicas − maxUnavailable Ready, and
// again; Recreate removes every old pod first. A StatefulSet replaces its
// pods one at a time from the highest ordinal, and under OrderedReady
// starts them one at a time in ordinal order and removes them the other
// way round.
func Waves(r manifest.Rollout, c Change) [][]string {
	var waves [][]string
	add := func(keys ...string) {
		if len(keys) > 0 {
			waves = append(waves, keys)
		}
	}
	one := func(keys []string) {
		for _, k := range keys {
			add(k)
		}
	}
	if r.Kind == "StatefulSet" {
		create, remove, replace := byOrdinal(c.Create), byOrdinal(c.Remove), byOrdinal(c.Replace)
		slices.Reverse(remove)
		slices.Reverse(replace)
		if r.Ordered {
			one(remove)
			one(create)
		} else {
			add(remove...)
			add(create...)
		}
		one(replace)
		return waves
	}
	if r.Recreate || len(c.Remove) == 0 || len(c.Create) == 0 {
		// Nothing to roll: the old pods go (first), the new ones start.
		add(c.Remove...)
		add(c.Replace...)
		add(c.Create...)
		return waves
	}
	add(c.Replace...)
	create, remove := c.Create, c.Remove
	total := len(c.Keep) + len(remove) // the pods there now, all counted available
	floor := r.Replicas - r.MaxUnavailable
	for len(create) > 0 || len(remove) > 0 {
		n := min(len(create), r.Replicas+r.MaxSurge-total)
		if len(remove) == 0 {
			n = len(create)
		}
		if n > 0 {
			add(create[:n]...)
			create, total = create[n:], total+n
		}
		m := min(len(remove), total-floor)
		if len(create) == 0 {
			m = len(remove)
		}
		if n <= 0 && m <= 0 {
			m = 1 // the bounds allow nothing (more old pods than replicas + surge): one goes
		}
		if m > 0 {
			add(remove[:m]...)
			remove, total = remove[m:], total-m
		}
	}
	return waves
}

// byOrdinal sorts a StatefulSet's pod keys by their ordinal.
func byOrdinal(keys []string) []string {
	out := slices.Clone(keys)
	ordinal := func(k string) int {
		n, _ := strconv.Atoi(k[strings.LastIndex(k, "-")+1:])
		return n
	}
	slices.SortStableFunc(out, func(a, b string) int { return ordinal(a) - ordinal(b) })
	return out
}
