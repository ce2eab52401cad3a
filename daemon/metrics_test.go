package daemon

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/run"
)

// TestPodMetricsFromOneSnapshot: a scrape while the pod metrics are
// replaced sees either listing whole, never a part of one (before, the
// gauges were reset, then refilled: a scrape could see zero pods).
func TestPodMetricsFromOneSnapshot(t *testing.T) {
	m := NewMetrics()
	var pods []*run.PodInfo
	for i := range 50 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i)},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 2}}}}
		pods = append(pods, &run.PodInfo{UID: fmt.Sprint(i), Namespace: "default", Name: p.Name, Pod: p})
	}
	m.setPods(pods)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				m.setPods(pods)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	for range 500 {
		families, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var total, restarts float64
		var series int
		for _, f := range families {
			switch f.GetName() {
			case "podrun_pods":
				for _, s := range f.GetMetric() {
					total += s.GetGauge().GetValue()
				}
			case "podrun_container_restarts":
				for _, s := range f.GetMetric() {
					restarts += s.GetGauge().GetValue()
					series++
				}
			}
		}
		if total != 50 || series != 50 || restarts != 100 {
			t.Fatalf("a scrape saw %v pods, %d restart series summing to %v; want 50, 50, 100", total, series, restarts)
		}
	}
}

type pullCounters struct{ bytes, stalls int64 }

func (c pullCounters) BytesRead() int64 { return c.bytes }
func (c pullCounters) Stalls() int64    { return c.stalls }

// TestPullMetrics: the link's counters are exported as they are at the scrape.
func TestPullMetrics(t *testing.T) {
	m := NewMetrics()
	m.CountPulls(pullCounters{bytes: 1234, stalls: 2})
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if len(f.GetMetric()) == 1 && f.GetMetric()[0].GetCounter() != nil {
			got[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if got["podrun_image_pull_bytes_total"] != 1234 || got["podrun_image_pull_stalls_total"] != 2 {
		t.Errorf("pull counters %v; want bytes 1234 and stalls 2", got)
	}
}

// TestUpdatesPendingMetric: the held updates are counted by reason at each
// scrape, both reasons always present (0 when none waits for it).
func TestUpdatesPendingMetric(t *testing.T) {
	m := NewMetrics()
	var pending []Pending
	m.gaugeUpdates(func() []Pending { return pending })
	scrape := func() map[string]float64 {
		t.Helper()
		families, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "podrun_updates_pending" {
				continue
			}
			for _, s := range f.GetMetric() {
				got[s.GetLabel()[0].GetValue()] = s.GetGauge().GetValue()
			}
		}
		return got
	}
	if got := scrape(); !maps.Equal(got, map[string]float64{"window": 0, "lock": 0}) {
		t.Errorf("nothing held: %v", got)
	}
	pending = []Pending{{Pod: "default/a", Reason: "window"}, {Pod: "default/b", Reason: "lock"}, {Pod: "default/c", Reason: "lock"}}
	if got := scrape(); !maps.Equal(got, map[string]float64{"window": 1, "lock": 2}) {
		t.Errorf("three held: %v", got)
	}
}
