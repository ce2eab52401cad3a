package daemon

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
)

func want(name, uid, source string) Want {
	return Want{Pod: &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}, UID: uid}, Source: source}
}

func names(pods []*manifest.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.UID)
	}
	return out
}

func TestDecide(t *testing.T) {
	const a, b = "/m/a.yaml", "/m/b.yaml"
	tests := []struct {
		name   string
		wants  []Want
		broken []string
		haves  []Have
		up     []string
		adopt  []string
		down   []string
		// refresh are the unchanged supervised pods whose config volumes
		// are rewritten in place.
		refresh []string
	}{
		{name: "new file starts its pods", wants: []Want{want("web", "u1", a), want("db", "u2", a)},
			up: []string{"db@u2", "web@u1"}},
		{name: "unchanged and supervised: only its config volumes refreshed", wants: []Want{want("web", "u1", a)},
			haves:   []Have{{UID: "u1", Namespace: "default", Name: "web", Source: a, Complete: true, Supervised: true}},
			refresh: []string{"web@u1"}},
		{name: "unchanged but not supervised (daemon restarted): adopt via Up", wants: []Want{want("web", "u1", a)},
			haves: []Have{{UID: "u1", Namespace: "default", Name: "web", Source: a, Complete: true}},
			up:    []string{"web@u1"}},
		{name: "one pod of a two-pod file changed: only it is replaced",
			wants: []Want{want("web", "u1b", a), want("db", "u2", a)},
			haves: []Have{{UID: "u1", Namespace: "default", Name: "web", Source: a, Complete: true, Supervised: true},
				{UID: "u2", Namespace: "default", Name: "db", Source: a, Complete: true, Supervised: true}},
			up: []string{"web@u1b"}, refresh: []string{"db@u2"}},
		{name: "half made pod is replaced", wants: []Want{want("web", "u1", a)},
			haves: []Have{{UID: "u1", Namespace: "default", Name: "web", Source: a}},
			up:    []string{"web@u1"}},
		{name: "removed file stops its pods",
			haves: []Have{{UID: "u1", Namespace: "default", Name: "web", Source: a, Complete: true, Supervised: true}},
			down:  []string{"u1"}},
		{name: "broken file keeps its pods and adopts them", broken: []string{a},
			haves: []Have{{UID: "u1", Namespace: "default", Name: "web", Source: a, Complete: true},
				{UID: "u3", Namespace: "default", Name: "old", Source: b, Complete: true, Supervised: true}},
			adopt: []string{"u1"}, down: []string{"u3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wants := map[string]Want{}
			for _, w := range tt.wants {
				wants[w.Pod.Namespace+"/"+w.Pod.Name] = w
			}
			broken := map[string]bool{}
			for _, s := range tt.broken {
				broken[s] = true
			}
			p := Decide(wants, broken, tt.haves)
			var down []string
			for _, h := range p.Down {
				down = append(down, h.UID)
			}
			if got := names(p.Up); !reflect.DeepEqual(got, tt.up) {
				t.Errorf("up = %v, want %v", got, tt.up)
			}
			if !reflect.DeepEqual(p.Adopt, tt.adopt) {
				t.Errorf("adopt = %v, want %v", p.Adopt, tt.adopt)
			}
			if got := names(p.Refresh); !reflect.DeepEqual(got, tt.refresh) {
				t.Errorf("refresh = %v, want %v", got, tt.refresh)
			}
			if !reflect.DeepEqual(down, tt.down) {
				t.Errorf("down = %v, want %v", down, tt.down)
			}
		})
	}
}
