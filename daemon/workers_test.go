package daemon

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

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
	ws := newWorkers(func(ctx context.Context, key string, j job) []run.Result {
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
