package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

// TestWorkersNeverWaitForEachOther: while one pod's change is slow (a long
// grace period), another pod's is made at once; updates of the slow pod
// meanwhile collapse into the latest, made once the slow change ends.
func TestWorkersNeverWaitForEachOther(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var made []string
	ws := newWorkers(func(ctx, _ context.Context, key string, j job) []run.Result {
		if key == "default/slow" && len(j.want.Pods) == 1 {
			<-release // the first change of slow lasts
		}
		mu.Lock()
		made = append(made, key+"@"+j.want.Pods[0].UID)
		mu.Unlock()
		return []run.Result{{Pod: key, Action: run.Created}}
	})
	want := func(uid string, n int) job {
		var pods []*manifest.Pod
		for range n {
			pods = append(pods, &manifest.Pod{UID: uid})
		}
		return job{want: run.Want{Pods: pods}}
	}
	ctx := context.Background()
	ws.update(ctx, "default/slow", want("v1", 1))
	ws.update(ctx, "default/fast", want("f1", 2))
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := slices.Contains(made, "default/fast@f1")
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fast pod waited for the slow one")
		}
		time.Sleep(time.Millisecond)
	}
	ws.update(ctx, "default/slow", want("v2", 2)) // superseded
	ws.update(ctx, "default/slow", want("v3", 2))
	close(release)
	ws.wait()
	if want := []string{"default/fast@f1", "default/slow@v1", "default/slow@v3"}; !slices.Equal(made, want) {
		t.Errorf("changes made %v, want %v", made, want)
	}
	got := ws.results(func(string) bool { return true })
	if len(got) != 2 || got["default/slow"][0].Action != run.Created {
		t.Errorf("latest results %v", got)
	}
	if got := ws.results(func(k string) bool { return k == "default/fast" }); len(got) != 1 {
		t.Errorf("results of pods no longer wanted are kept: %v", got)
	}
}

// TestWorkersBoundStarts: pods started at once are bounded by the slots
// (so the first of a batch is up sooner); removals take no slot.
func TestWorkersBoundStarts(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	running, most, removing := 0, 0, 0
	ws := newWorkers(func(ctx, _ context.Context, key string, j job) []run.Result {
		mu.Lock()
		if len(j.want.Pods) == 0 {
			removing++
		} else {
			running++
			most = max(most, running)
		}
		mu.Unlock()
		<-release
		mu.Lock()
		if len(j.want.Pods) > 0 {
			running--
		}
		mu.Unlock()
		return nil
	})
	slots := cap(ws.starts)
	ctx := context.Background()
	var pods []*manifest.Pod
	for i := range 3 * slots {
		pods = append(pods, &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprint("p", i)}}})
	}
	for _, p := range pods {
		ws.update(ctx, p.Key(), job{want: run.Want{Pods: pods}})
	}
	for i := range 3 {
		ws.update(ctx, fmt.Sprint("default/gone", i), job{})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		r, g := running, removing
		mu.Unlock()
		if r == slots && g == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d starts and %d removals under way, want %d and 3", r, g, slots)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	ws.wait()
	if most != slots {
		t.Errorf("at most %d pods started at once, want %d", most, slots)
	}
}

// TestWorkersCancelAMootStart: a start that the pod's next wanted state
// makes moot (its file removed, or changed) is cancelled at once and the
// next state made; the same wanted state again (a re-scan) cancels nothing.
func TestWorkersCancelAMootStart(t *testing.T) {
	pod := func(uid string) *manifest.Pod {
		return &manifest.Pod{UID: uid, Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}}
	}
	started := make(chan struct{}, 4)
	var mu sync.Mutex
	var made []string
	ws := newWorkers(func(ctx, _ context.Context, key string, j job) []run.Result {
		what := "remove"
		if len(j.want.Pods) > 0 {
			what = "start " + j.want.Pods[0].UID
			started <- struct{}{}
			select { // a start that never ends by itself: an init container crash-looping
			case <-ctx.Done():
				what += " cancelled"
			case <-time.After(10 * time.Second):
			}
		}
		mu.Lock()
		made = append(made, what)
		mu.Unlock()
		return nil
	})
	ctx := context.Background()
	for _, next := range []job{{want: run.Want{Pods: []*manifest.Pod{pod("v2")}}}, {}} {
		made = nil
		ws.update(ctx, "default/p", job{want: run.Want{Pods: []*manifest.Pod{pod("v1")}}})
		<-started
		ws.update(ctx, "default/p", job{want: run.Want{Pods: []*manifest.Pod{pod("v1")}}}) // a re-scan
		ws.update(ctx, "default/p", next)
		begun := time.Now()
		if len(next.want.Pods) > 0 {
			<-started // v2 starts once v1's start is cancelled; end it
			ws.update(ctx, "default/p", job{})
		}
		ws.wait()
		want := []string{"start v1 cancelled", "remove"}
		if len(next.want.Pods) > 0 {
			want = []string{"start v1 cancelled", "start v2 cancelled", "remove"}
		}
		if !slices.Equal(made, want) || time.Since(begun) > 5*time.Second {
			t.Errorf("made %v in %v, want %v at once", made, time.Since(begun), want)
		}
	}
}

// TestWorkersLifeOutlivesTheChange: a change's own context ends with it;
// the one for what it leaves running (a watch of its progress) ends only
// with the daemon's.
func TestWorkersLifeOutlivesTheChange(t *testing.T) {
	var change, life context.Context
	ws := newWorkers(func(ctx, l context.Context, key string, j job) []run.Result {
		change, life = ctx, l
		return []run.Result{{Pod: key, Action: run.Replaced}}
	})
	daemon, stop := context.WithCancel(context.Background())
	ws.update(daemon, "default/web", job{want: run.Want{Pods: []*manifest.Pod{{UID: "v2"}}}})
	ws.wait()
	if change.Err() == nil {
		t.Fatal("the change's context outlived it")
	}
	if life.Err() != nil {
		t.Fatal("the context for what the change leaves running ended with the change")
	}
	stop()
	if life.Err() == nil {
		t.Fatal("the context for what the change leaves running outlived the daemon")
	}
}
