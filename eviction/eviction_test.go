package eviction

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func emptyDirVolume(name string, medium corev1.StorageMedium, limit string) corev1.Volume {
	e := &corev1.EmptyDirVolumeSource{Medium: medium}
	if limit != "" {
		q := resource.MustParse(limit)
		e.SizeLimit = &q
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: e}}
}

func TestOverLimit(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		emptyDirVolume("nolimit", "", ""),
		emptyDirVolume("mem", corev1.StorageMediumMemory, "1Mi"),
		emptyDirVolume("zero", "", "0"),
		emptyDirVolume("a", "", "1Mi"),
		emptyDirVolume("b", "", "500k"),
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
	}}}
	vols := SizeLimited(pod)
	var names []string
	for _, v := range vols {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("sizeLimited = %v, want [a b] (disk emptyDirs with a positive limit)", names)
	}
	usage := map[string]int64{"a": 1 << 20, "b": 500_000}
	measure := func(name string) (int64, error) {
		if u, ok := usage[name]; ok {
			return u, nil
		}
		return 0, errors.New("no stats")
	}
	if msg := OverLimit(vols, measure); msg != "" {
		t.Errorf("at their limits exactly: %q, want no eviction", msg)
	}
	usage["b"]++
	if msg, want := OverLimit(vols, measure), `Usage of EmptyDir volume "b" exceeds the limit "500k". `; msg != want {
		t.Errorf("b one byte over: %q, want %q", msg, want)
	}
	usage["a"] = 4 << 20
	if msg, want := OverLimit(vols, measure), `Usage of EmptyDir volume "a" exceeds the limit "1Mi". `; msg != want {
		t.Errorf("a over: %q, want %q", msg, want)
	}
	// A volume that cannot be measured counts as over its limit (a
	// container could otherwise hide any amount of data from the walk).
	delete(usage, "a")
	usage["b"] = 0
	if msg, want := OverLimit(vols, measure), `Usage of EmptyDir volume "a" cannot be measured (no stats): it counts as over the limit "1Mi". `; msg != want {
		t.Errorf("a unmeasurable: %q, want %q", msg, want)
	}
}
