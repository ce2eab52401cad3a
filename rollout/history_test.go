package rollout

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// TestHistoryKeepsReadyVersions: a version told Ready is kept with what it
// was applied with; the same version again is kept once; Forget drops the
// pod's versions.
func TestHistoryKeepsReadyVersions(t *testing.T) {
	h, _ := newHistory(t)
	v1 := version(t, "1")
	v1.ConfigMaps = map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}}
	ready(t, h, v1, v1)
	revs, err := h.List("default/web")
	if err != nil || len(revs) != 1 {
		t.Fatalf("List = %v, %v; want one version", revs, err)
	}
	if r := revs[0]; r.Revision != 1 || r.Hash != v1.Hash || r.UID != v1.UID || r.Source != "/m/web.yaml" || !r.Ready.Equal(start) ||
		r.Pod.Name != "web" || r.ConfigMaps["cfg"].Data["k"] != "v" {
		t.Fatalf("kept %+v, want revision 1 of the pod as applied", r)
	}
	if err := h.Forget("default/web"); err != nil {
		t.Fatal(err)
	}
	if revs, _ := h.List("default/web"); revs != nil {
		t.Fatalf("after Forget: %v, want nothing kept", revs)
	}
}

// TestBefore: the version a changed pod that failed goes back to is the
// newest other one kept, rebuilt to apply; none when none is.
func TestBefore(t *testing.T) {
	v1, v2, v3 := version(t, "1"), version(t, "2"), version(t, "3")
	tests := []struct {
		name   string
		kept   []string // versions, by V
		failed string
		want   int // revision; 0: none
	}{
		{name: "nothing kept", failed: "2"},
		{name: "only the failed one", kept: []string{"2"}, failed: "2"},
		{name: "one before", kept: []string{"1"}, failed: "2", want: 1},
		{name: "the newest other", kept: []string{"1", "2", "3"}, failed: "3", want: 2},
		{name: "a failed one kept before", kept: []string{"1", "2"}, failed: "1", want: 2},
	}
	byV := map[string]*manifest.Pod{"1": v1, "2": v2, "3": v3}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newHistory(t)
			for _, v := range tt.kept {
				ready(t, h, byV[v])
			}
			p, rev, err := h.Before("default/web", byV[tt.failed].Hash)
			switch {
			case err != nil:
				t.Fatal(err)
			case tt.want == 0 && p != nil:
				t.Fatalf("Before = revision %d, want none", rev)
			case tt.want > 0 && (p == nil || rev != tt.want || p.Hash != byV[tt.kept[tt.want-1]].Hash || p.Source.File != "/m/web.yaml"):
				t.Fatalf("Before = %v, %d; want revision %d rebuilt", p, rev, tt.want)
			}
		})
	}
}
