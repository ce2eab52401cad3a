package eviction

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/status"
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

func TestDeadline(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		ads    *int64
		start  time.Time
		want   time.Time
		wantOK bool
	}{
		{"no deadline", nil, start, time.Time{}, false},
		{"no start time", ptr[int64](30), time.Time{}, time.Time{}, false},
		{"30 s", ptr[int64](30), start, start.Add(30 * time.Second), true},
		{"0 s: at once", ptr[int64](0), start, start, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.ads}}
			if at, ok := Deadline(pod, tc.start); !at.Equal(tc.want) || ok != tc.wantOK {
				t.Errorf("Deadline = %v, %v; want %v, %v", at, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestDecide(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	over := `Usage of EmptyDir volume "a" exceeds the limit "1Mi". `
	evicted := Verdict{End: true, Why: status.Ended{Reason: "Evicted", Message: over}, Note: "evicted: " + over, Grace: ptr(time.Second), While: Alive}
	exceeded := Verdict{End: true, Why: status.Ended{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"},
		Note: "DeadlineExceeded: Pod was active on the node longer than the specified deadline", While: Active}
	for _, tc := range []struct {
		name string
		ads  *int64
		f    Facts
		want Verdict
	}{
		{"nothing found", nil, Facts{Alive: true}, Verdict{}},
		{"over its limit", nil, Facts{Alive: true, Over: over}, evicted},
		{"over its limit, sandbox not up: only active pods are evicted", nil, Facts{Over: over}, Verdict{}},
		{"before the deadline", ptr[int64](30), Facts{Now: start.Add(30*time.Second - time.Nanosecond), Start: start}, Verdict{}},
		{"at the deadline", ptr[int64](30), Facts{Now: start.Add(30 * time.Second), Start: start}, exceeded},
		{"long past the deadline", ptr[int64](30), Facts{Now: start.Add(time.Hour), Start: start}, exceeded},
		{"no start time: not counted", ptr[int64](30), Facts{Now: start.Add(time.Hour)}, Verdict{}},
		{"no deadline", nil, Facts{Now: start.Add(time.Hour), Start: start}, Verdict{}},
		{"over its limit and past the deadline: evicted", ptr[int64](30), Facts{Alive: true, Over: over, Now: start.Add(time.Hour), Start: start}, evicted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.ads}}
			got := Decide(pod, tc.f)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}
