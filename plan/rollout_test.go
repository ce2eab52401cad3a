package plan

import (
	"fmt"
	"testing"

	"github.com/podrun/podrun/manifest"
)

func TestWaves(t *testing.T) {
	deployment := func(replicas, surge, unavailable int) manifest.Rollout {
		return manifest.Rollout{Kind: "Deployment", Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable}
	}
	keys := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		r    manifest.Rollout
		c    Change
		want string
	}{
		{"first start: all at once", deployment(3, 1, 0), Change{Create: keys("n", 3)}, "[[n0 n1 n2]]"},
		{"scale up adds the difference", deployment(3, 1, 0), Change{Keep: keys("k", 2), Create: keys("n", 1)}, "[[n0]]"},
		{"scale down removes the difference", deployment(1, 1, 0), Change{Keep: keys("k", 1), Remove: keys("o", 2)}, "[[o0 o1]]"},
		// replicas 2 with the defaults (25%: surge 1, unavailable 0): one
		// new pod Ready before each old one goes, never fewer than 2 Ready.
		{"rolling update, surge 1", deployment(2, 1, 0), Change{Create: keys("n", 2), Remove: keys("o", 2)}, "[[n0] [o0] [n1] [o1]]"},
		{"rolling update and scale up", deployment(3, 1, 0), Change{Create: keys("n", 3), Remove: keys("o", 2)}, "[[n0 n1] [o0] [n2] [o1]]"},
		{"rolling update and scale down", deployment(1, 1, 0), Change{Create: keys("n", 1), Remove: keys("o", 3)}, "[[o0 o1] [n0] [o2]]"},
		{"unavailable first, no surge", deployment(2, 0, 1), Change{Create: keys("n", 2), Remove: keys("o", 2)}, "[[o0] [n0] [o1] [n1]]"},
		{"wide bounds", deployment(4, 2, 1), Change{Create: keys("n", 4), Remove: keys("o", 4)}, "[[n0 n1] [o0 o1 o2] [n2 n3] [o3]]"},
		{"recreate", manifest.Rollout{Kind: "Deployment", Replicas: 2, Recreate: true}, Change{Create: keys("n", 2), Remove: keys("o", 2)}, "[[o0 o1] [n0 n1]]"},
		{"daemonset", manifest.Rollout{Kind: "DaemonSet", Replicas: 1, MaxUnavailable: 1}, Change{Create: keys("n", 1), Remove: keys("o", 1)}, "[[o0] [n0]]"},
		{"statefulset ordered start", manifest.Rollout{Kind: "StatefulSet", Replicas: 3, MaxUnavailable: 1, Ordered: true},
			Change{Create: []string{"db-2", "db-10", "db-0"}}, "[[db-0] [db-2] [db-10]]"},
		{"statefulset parallel start", manifest.Rollout{Kind: "StatefulSet", Replicas: 2, MaxUnavailable: 1},
			Change{Create: []string{"db-0", "db-1"}}, "[[db-0 db-1]]"},
		{"statefulset update, highest first", manifest.Rollout{Kind: "StatefulSet", Replicas: 3, MaxUnavailable: 1, Ordered: true},
			Change{Replace: []string{"db-0", "db-1", "db-2"}}, "[[db-2] [db-1] [db-0]]"},
		{"statefulset scale down, highest first", manifest.Rollout{Kind: "StatefulSet", Replicas: 1, MaxUnavailable: 1, Ordered: true},
			Change{Keep: []string{"db-0"}, Remove: []string{"db-1", "db-2"}}, "[[db-2] [db-1]]"},
	} {
		if got := fmt.Sprint(Waves(tc.r, tc.c)); got != tc.want {
			t.Errorf("%s: waves %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestWavesKeepReplicasReady plays every rolling update out and checks
// the bounds at each moment: never more than replicas + maxSurge pods,
// never fewer than replicas − maxUnavailable (a wave's new pods count
// once it has ended, Ready).
func TestWavesKeepReplicasReady(t *testing.T) {
	for replicas := 1; replicas <= 6; replicas++ {
		for surge := 0; surge <= 3; surge++ {
			for unavailable := 0; unavailable <= 3; unavailable++ {
				if surge == 0 && unavailable == 0 {
					continue
				}
				r := manifest.Rollout{Kind: "Deployment", Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable}
				var c Change
				for i := range replicas {
					c.Create = append(c.Create, fmt.Sprint("n", i))
					c.Remove = append(c.Remove, fmt.Sprint("o", i))
				}
				pods, created, removed := replicas, 0, 0
				for _, wave := range Waves(r, c) {
					if wave[0][0] == 'n' {
						pods += len(wave)
						created += len(wave)
						if pods > replicas+surge {
							t.Errorf("%+v: %d pods after wave %v", r, pods, wave)
						}
					} else {
						pods -= len(wave)
						removed += len(wave)
						if pods < replicas-unavailable {
							t.Errorf("%+v: %d pods Ready after wave %v", r, pods, wave)
						}
					}
				}
				if created != replicas || removed != replicas {
					t.Errorf("%+v: created %d, removed %d", r, created, removed)
				}
			}
		}
	}
}
