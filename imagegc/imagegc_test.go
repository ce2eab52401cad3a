package imagegc

import (
	"slices"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	imgs := []Image{
		{Ref: "in-use", Size: 50, Created: ago(time.Hour), InUse: true},
		{Ref: "young", Size: 50, Created: ago(time.Minute)},
		{Ref: "used-yesterday", Size: 10, Created: ago(48 * time.Hour), LastUsed: ago(24 * time.Hour)},
		{Ref: "used-an-hour-ago", Size: 10, Created: ago(48 * time.Hour), LastUsed: ago(time.Hour)},
		{Ref: "never-used-old", Size: 10, Created: ago(72 * time.Hour)},
		{Ref: "never-used-newer", Size: 10, Created: ago(3 * time.Hour)},
	}
	refs := func(out []Image) []string {
		var r []string
		for _, i := range out {
			r = append(r, i.Ref)
		}
		return r
	}
	for _, tt := range []struct {
		name  string
		usage Usage
		want  []string
	}{
		{"below the high threshold", Usage{Used: 84, Capacity: 100}, nil},
		{"at it: down to 80", Usage{Used: 85, Capacity: 100}, []string{"never-used-old"}},
		{"far above: every candidate, LRU first", Usage{Used: 990, Capacity: 1000},
			[]string{"never-used-old", "never-used-newer", "used-yesterday", "used-an-hour-ago"}},
		{"unknown capacity", Usage{Used: 99}, nil},
	} {
		if got := refs(Plan(imgs, tt.usage, DefaultPolicy, now)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := refs(Unused(imgs, 0, now)); !slices.Equal(got, []string{"never-used-old", "never-used-newer", "young", "used-yesterday", "used-an-hour-ago"}) {
		t.Errorf("Unused(0): %v", got)
	}
}
