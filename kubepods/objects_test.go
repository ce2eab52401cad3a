package kubepods

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/manifest"
)

// configPod is a web pod that also mounts ConfigMap cfg and Secret sec.
func configPod(t *testing.T, name string) *corev1.Pod {
	return webPod(t, name, func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes,
			corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}})
	})
}

func configMap(level, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", ResourceVersion: rv}, Data: map[string]string{"level": level}}
}

// untilPoked reads s's pods again at each poke (as Run does) until ok
// holds of what it read.
func untilPoked(t *testing.T, s *Source, pods []*corev1.Pod, ok func(Wanted) bool) Wanted {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-s.poke:
		case <-deadline:
			t.Fatal("no poke brought the change")
		}
		if w := s.read(context.Background(), pods); ok(w) {
			return w
		}
	}
}

// TestSourceWatchesObjects: each object a pod names is watched alone
// (list and watch by metadata.name, never a GET); a change of it pokes
// the source, whose next read carries it (and changes the fingerprint
// the daemon acts on); an object no pod names any more is no longer
// watched; an immutable one is watched no more once read.
func TestSourceWatchesObjects(t *testing.T) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "default", ResourceVersion: "1"}, Data: map[string][]byte{"k": []byte("v")}}
	cs := tokenIssuing(rootCA(), configMap("one", "1"), sec)
	s := NewSource(cs, "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), quiet())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := []*corev1.Pod{configPod(t, "a")}
	w := s.read(ctx, pods)
	if len(w.Pods) != 1 || w.Pods[0].ConfigMaps["cfg"].Data["level"] != "one" || w.Pods[0].Secrets["sec"] == nil || len(w.Problems) != 0 {
		t.Fatalf("first read: pods %s, problems %q", podKeys(w), w.Problems)
	}
	if len(s.watches.items) != 3 || s.failed {
		t.Errorf("watched %d objects (failed %t), want 3: kube-root-ca.crt, cfg, sec", len(s.watches.items), s.failed)
	}
	before := fingerprint(w)
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, configMap("two", "2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w = untilPoked(t, s, pods, func(w Wanted) bool { return len(w.Pods) == 1 && w.Pods[0].ConfigMaps["cfg"].Data["level"] == "two" })
	if fingerprint(w) == before {
		t.Error("the changed ConfigMap left the fingerprint as it was: the daemon would not write it")
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("a GET: %v", a)
		}
	}

	// Deleted: the pod waits for it (a problem), as it would at start.
	if err := cs.CoreV1().Secrets("default").Delete(ctx, "sec", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	untilPoked(t, s, pods, func(w Wanted) bool { return len(w.Problems) == 1 })

	// No pod names them any more: not watched, not kept.
	s.read(ctx, nil)
	if len(s.watches.items) != 0 || len(s.objects) != 0 {
		t.Errorf("after the pod went: %d watched, %d objects", len(s.watches.items), len(s.objects))
	}

	// Immutable: its watch ends once read; its content stays.
	yes := true
	cm := configMap("three", "3")
	cm.Immutable = &yes
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods = []*corev1.Pod{webPod(t, "b", func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, configPod(t, "x").Spec.Volumes[1]) })}
	w = s.read(ctx, pods)
	k := objectKey{kind: "ConfigMap", namespace: "default", name: "cfg"}
	if len(w.Pods) != 1 || w.Pods[0].ConfigMaps["cfg"].Data["level"] != "three" || s.watches.items[k] == nil || s.watches.items[k].stop != nil {
		t.Errorf("immutable: pods %s, watch %+v (want stopped)", podKeys(w), s.watches.items[k])
	}
	if w2 := s.read(ctx, pods); fingerprint(w2) != fingerprint(w) {
		t.Error("an immutable object read again differs")
	}
}

// TestSourceObjectNotListed: an object whose watch cannot list (the API
// server away, or not yet allowing the node to read it) is as last read
// (here: kept) after FirstSyncWait, and the pods are read again soon.
func TestSourceObjectNotListed(t *testing.T) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "default"}}
	cs := tokenIssuing(rootCA(), sec)
	cs.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.ListAction).GetListRestrictions().Fields.String() == "metadata.name=cfg" {
			return true, nil, errors.New("forbidden for a moment")
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(t0)
	s := NewSource(cs, "vm", manifest.Options{}, clk, quiet())
	s.objects[objectKey{kind: "ConfigMap", namespace: "default", name: "cfg"}] = object{cm: configMap("kept", "1")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Wanted)
	go func() { done <- s.read(ctx, []*corev1.Pod{configPod(t, "a")}) }()
	var w Wanted
	for waited := false; !waited; {
		select {
		case w = <-done:
			waited = true
		case <-time.After(10 * time.Millisecond):
			clk.Step(FirstSyncWait) // the read's wait, and the reflectors' back-off
		}
	}
	if len(w.Pods) != 1 || w.Pods[0].ConfigMaps["cfg"].Data["level"] != "kept" || !s.failed || len(w.Problems) != 0 {
		t.Errorf("pods %s, problems %q, failed %t: want the kept ConfigMap, read again soon", podKeys(w), w.Problems, s.failed)
	}
}
