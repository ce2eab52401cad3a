package run

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/eviction"
	"github.com/podrun/podrun/labels"
)

func emptyDirVolume(name string, medium corev1.StorageMedium, limit string) corev1.Volume {
	e := &corev1.EmptyDirVolumeSource{Medium: medium}
	if limit != "" {
		q := resource.MustParse(limit)
		e.SizeLimit = &q
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: e}}
}

// TestEvictionOverSizeLimit: the housekeeping check measures every 10 s;
// over the limit, the pod is Failed/Evicted, its container is stopped with
// the eviction's grace period and not restarted, and its sandbox ends.
func TestEvictionOverSizeLimit(t *testing.T) {
	ps := appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "main"})
	ps.Volumes = []corev1.Volume{emptyDirVolume("scratch", "", "1Mi")}
	hs := newHarness(t, ps)
	dir := hs.r.layout.EmptyDir("scratch")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	hs.startApp("main")
	id := hs.waitRunning("main", 0)
	hs.h.supervise(hs.r)

	// Under the limit: nothing happens at the first check.
	if err := os.WriteFile(filepath.Join(dir, "small"), make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if asked := hs.clk.waitAsked(t, 1); asked[0] != eviction.HousekeepingInterval {
		t.Fatalf("first clock wait %v, want the housekeeping interval", asked)
	}
	hs.clk.Advance(eviction.HousekeepingInterval)
	hs.clk.waitAsked(t, 2)
	if hs.called("Kill " + id + " SIGTERM") {
		t.Fatal("killed under the limit")
	}

	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	hs.clk.Advance(eviction.HousekeepingInterval)
	var st *State
	hs.eventually("the eviction recorded", func() bool {
		st, _ = hs.h.loadState(testUID)
		return st != nil && st.Ended != nil
	})
	if !hs.called("Kill " + SandboxID(testUID) + " SIGKILL") {
		t.Errorf("the sandbox was not killed; calls: %v", hs.eng.Calls())
	}
	want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	if st.Ended == nil || st.Ended.Reason != "Evicted" || st.Ended.Message != want {
		t.Fatalf("state.Ended = %+v, want Evicted with %q", st.Ended, want)
	}
	if !hs.called("Kill " + id + " SIGTERM") {
		t.Errorf("the container was not sent SIGTERM; calls: %v", hs.eng.Calls())
	}
	if l := hs.labels(id); l[labels.ExitCode] != "143" || l[labels.Waiting] != "" {
		t.Errorf("labels after eviction: exit-code %q waiting %q, want 143 and no back-off", l[labels.ExitCode], l[labels.Waiting])
	}
	if !slices.ContainsFunc(hs.messages(), func(m string) bool { return strings.Contains(m, "evicted: "+want) }) {
		t.Errorf("no eviction event in %q", hs.messages())
	}

	// No restart, however long.
	hs.clk.Advance(time.Hour)
	time.Sleep(50 * time.Millisecond)
	if hs.called("Create " + hs.id("main", 1)) {
		t.Error("the evicted container was restarted")
	}

	// ps and status compute Failed/Evicted from the state file.
	pods, err := hs.h.Pods(hs.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Pod == nil {
		t.Fatalf("Pods = %+v", pods)
	}
	s := pods[0].Pod.Status
	if s.Phase != corev1.PodFailed || s.Reason != "Evicted" || s.Message != want {
		t.Errorf("status phase %s reason %q message %q, want Failed/Evicted/%q", s.Phase, s.Reason, s.Message, want)
	}
	if term := s.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 143 {
		t.Errorf("container state %+v, want terminated with 143", s.ContainerStatuses[0].State)
	}
	if task, err := hs.eng.Task(hs.ctx, id); err == nil && task.State == engine.TaskRunning {
		t.Errorf("container still running: %+v", task)
	}
}
