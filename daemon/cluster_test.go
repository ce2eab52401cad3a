package daemon

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
)

// cluster is a Cluster that says what it is told.
type cluster struct {
	pods     []*manifest.Pod
	grace    map[string]time.Duration
	problems []string
	synced   bool
}

func (c *cluster) Source() string { return "kubernetes://apiserver" }
func (c *cluster) Wanted() ([]*manifest.Pod, map[string]time.Duration, []string, bool) {
	return c.pods, c.grace, c.problems, c.synced
}
func (c *cluster) Changed() <-chan struct{} { return nil }

func apiPod(name, uid string) *manifest.Pod {
	return &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}, UID: uid,
		Source: manifest.Source{File: "kubernetes://apiserver"}}
}

// TestAddCluster: the pods bound to the node join the static ones; a
// static pod of the same name wins; until the API server answered, its
// source is broken (its pods on the node stay); the daemon owns its pods.
func TestAddCluster(t *testing.T) {
	static := "/etc/podrun/manifests/a.yaml"
	for _, tc := range []struct {
		name string
		c    cluster
		want string
	}{
		{"synced", cluster{pods: []*manifest.Pod{apiPod("web", "u1"), apiPod("a-vm", "u2")}, grace: map[string]time.Duration{"u3": 5 * time.Second}, synced: true},
			"wants [default/a-vm=" + static + " default/web=kubernetes://apiserver] broken [] problems [pod default/a-vm bound to this node is also defined in " + static + ", which wins] grace map[u3:5s]"},
		{"not synced yet", cluster{problems: []string{"pod x: bad"}},
			"wants [default/a-vm=" + static + "] broken [kubernetes://apiserver] problems [pod x: bad] grace map[]"},
	} {
		d := &Daemon{o: Options{Cluster: &tc.c}}
		wants := map[string]Want{"default/a-vm": {Pod: apiPod("a-vm", "s"), Source: static}}
		broken := map[string]bool{}
		grace, problems := d.addCluster(wants, broken, nil)
		var ws, bs, ps []string
		for _, k := range slices.Sorted(maps.Keys(wants)) {
			ws = append(ws, k+"="+wants[k].Source)
		}
		for k := range broken {
			bs = append(bs, k)
		}
		for _, p := range problems {
			ps = append(ps, p.Msg)
			if p.Source != "kubernetes://apiserver" {
				t.Errorf("%s: problem of %s", tc.name, p.Source)
			}
		}
		got := fmt.Sprintf("wants %v broken %v problems %v grace %v", ws, bs, ps, grace)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	s := &Sources{Dir: "/etc/podrun/manifests", API: "kubernetes://apiserver"}
	if !s.Owns("kubernetes://apiserver") || (&Sources{Dir: "/etc/podrun/manifests"}).Owns("kubernetes://apiserver") {
		t.Error("Owns: the API's pods are the daemon's only with a cluster")
	}
}
