package daemon

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// TestKeptImages: the images kept from GC are those of every container of
// the pods wanted at the last set, init containers included, and get
// returns a copy.
func TestKeptImages(t *testing.T) {
	pod := func(init []string, apps ...string) Want {
		spec := corev1.PodSpec{}
		for i, img := range init {
			spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: fmt.Sprint("i", i), Image: img})
		}
		for i, img := range apps {
			spec.Containers = append(spec.Containers, corev1.Container{Name: fmt.Sprint("c", i), Image: img})
		}
		return Want{Pod: &manifest.Pod{Pod: &corev1.Pod{Spec: spec}}}
	}
	for _, tc := range []struct {
		name  string
		wants map[string]Want
		want  []string
	}{
		{"no pods", nil, nil},
		{"one container", map[string]Want{"default/a": pod(nil, "nginx:1")}, []string{"nginx:1"}},
		{"init and apps", map[string]Want{"default/a": pod([]string{"busybox"}, "app:1", "sidecar:2")}, []string{"app:1", "busybox", "sidecar:2"}},
		{"every pod", map[string]Want{"default/a": pod(nil, "a"), "kube-system/b": pod(nil, "b")}, []string{"a", "b"}},
		{"an image twice", map[string]Want{"default/a": pod(nil, "a"), "default/b": pod(nil, "a")}, []string{"a", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k keptImages
			k.set(map[string]Want{"default/old": pod(nil, "old")}) // replaced by the next set
			k.set(tc.wants)
			got := k.get()
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("kept %q, want %q", got, tc.want)
			}
			if len(got) > 0 {
				got[0] = "changed"
				if again := k.get(); slices.Contains(again, "changed") {
					t.Fatalf("get returned the kept slice itself: %q", again)
				}
			}
		})
	}
}

// TestKeptImagesConcurrent (run with -race): the sync sets the images
// while the collector's goroutine reads them.
func TestKeptImagesConcurrent(t *testing.T) {
	var k keptImages
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			img := fmt.Sprint("img:", i)
			k.set(map[string]Want{"default/a": {Pod: &manifest.Pod{Pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: img}}}}}}})
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			if got := k.get(); len(got) > 1 {
				t.Errorf("kept %q: one image at a time", got)
			}
		}
	}()
	wg.Wait()
	if got := k.get(); !slices.Equal(got, []string{"img:199"}) {
		t.Fatalf("kept %q after the last set, want [img:199]", got)
	}
}
