package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// fakeJobs makes jobWants whose goroutines count their starts and run
// until cancelled.
type fakeJobs struct {
	mu      sync.Mutex
	started map[string]int // by uid
	running map[string]bool
}

func (f *fakeJobs) want(kind, name, uid, source string) jobWant {
	return jobWant{uid: uid, run: &jobRun{kind: kind, ns: "ns", name: name, source: source}, start: func(ctx context.Context) {
		f.mu.Lock()
		f.started[uid]++
		f.running[uid] = true
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		delete(f.running, uid)
		f.mu.Unlock()
	}}
}

func names(jrs []*jobRun) []string {
	var out []string
	for _, jr := range jrs {
		out = append(out, jr.kind+"/"+jr.ns+"/"+jr.name)
	}
	slices.Sort(out)
	return out
}

// TestJobRunsAssign: the second of two syncs starts the goroutines of the
// Jobs and CronJobs new to it, stops those no source defines (but those of
// a broken source), forgets the records of a Job whose name is gone, and
// owns the pods of those it keeps.
func TestJobRunsAssign(t *testing.T) {
	type owned struct {
		ns, cronJob, jobUID string
		want                bool
	}
	f := &fakeJobs{}
	for _, tc := range []struct {
		name          string
		first, second []jobWant
		broken        map[string]bool
		stopped       []string
		forget        []string
		started       map[string]int
		owns          []owned
	}{
		{name: "new ones start", second: []jobWant{f.want("Job", "j", "u1", "f1"), f.want("CronJob", "c", "u2", "f1")},
			started: map[string]int{"u1": 1, "u2": 1},
			owns: []owned{{"ns", "", "u1", true}, {"ns", "c", "", true}, {"ns", "c", "other", true}, {"ns", "", "other", false},
				{"other", "c", "", false}, {"ns", "", "", false}, {"ns", "j", "", false}}},
		{name: "an unchanged one is not restarted", first: []jobWant{f.want("Job", "j", "u1", "f1")}, second: []jobWant{f.want("Job", "j", "u1", "f1")},
			started: map[string]int{"u1": 1}, owns: []owned{{"ns", "", "u1", true}}},
		{name: "a removed Job stops and is forgotten", first: []jobWant{f.want("Job", "j", "u1", "f1")},
			stopped: []string{"Job/ns/j"}, forget: []string{"Job/ns/j"}, started: map[string]int{"u1": 1},
			owns: []owned{{"ns", "", "u1", false}}},
		{name: "a removed CronJob stops, nothing forgotten", first: []jobWant{f.want("CronJob", "c", "u2", "f1")},
			stopped: []string{"CronJob/ns/c"}, started: map[string]int{"u2": 1}, owns: []owned{{"ns", "c", "", false}}},
		{name: "a broken source keeps its Jobs", first: []jobWant{f.want("Job", "j", "u1", "f1"), f.want("CronJob", "c", "u2", "f1"), f.want("Job", "k", "u3", "f2")},
			broken: map[string]bool{"f1": true}, stopped: []string{"Job/ns/k"}, forget: []string{"Job/ns/k"},
			started: map[string]int{"u1": 1, "u2": 1, "u3": 1},
			owns:    []owned{{"ns", "", "u1", true}, {"ns", "c", "", true}, {"ns", "", "u3", false}}},
		{name: "a changed Job is another; its name's records stay", first: []jobWant{f.want("Job", "j", "u1", "f1")},
			second: []jobWant{f.want("Job", "j", "u1b", "f1")}, stopped: []string{"Job/ns/j"},
			started: map[string]int{"u1": 1, "u1b": 1}, owns: []owned{{"ns", "", "u1", false}, {"ns", "", "u1b", true}}},
		{name: "a changed CronJob still owns its name's pods", first: []jobWant{f.want("CronJob", "c", "u2", "f1")},
			second: []jobWant{f.want("CronJob", "c", "u2b", "f1")}, stopped: []string{"CronJob/ns/c"},
			started: map[string]int{"u2": 1, "u2b": 1}, owns: []owned{{"ns", "c", "", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.mu.Lock()
			f.started, f.running = map[string]int{}, map[string]bool{}
			f.mu.Unlock()
			var r jobRuns
			ctx := t.Context()
			if stopped, forget := r.assign(ctx, tc.first, nil); len(stopped)+len(forget) > 0 {
				t.Fatalf("first assign stopped %v, forgot %v", names(stopped), names(forget))
			}
			stopped, forget := r.assign(ctx, tc.second, tc.broken)
			for _, jr := range stopped {
				<-jr.done
			}
			if got := names(stopped); !slices.Equal(got, tc.stopped) {
				t.Errorf("stopped %v, want %v", got, tc.stopped)
			}
			if got := names(forget); !slices.Equal(got, tc.forget) {
				t.Errorf("forget %v, want %v", got, tc.forget)
			}
			for _, o := range tc.owns {
				if got := r.owns(o.ns, o.cronJob, o.jobUID); got != o.want {
					t.Errorf("owns(%q, %q, %q) = %v, want %v", o.ns, o.cronJob, o.jobUID, got, o.want)
				}
			}
			r.stopAll()
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.started) != len(tc.started) {
				t.Errorf("started %v, want %v", f.started, tc.started)
			}
			for uid, n := range tc.started {
				if f.started[uid] != n {
					t.Errorf("started %v, want %v", f.started, tc.started)
				}
			}
			if len(f.running) > 0 {
				t.Errorf("still running after stopAll: %v", f.running)
			}
		})
	}
}

// TestJobRunsConcurrent (run with -race): the workers' prunes ask owns
// while syncs assign and wait for the goroutines they stop, and the
// shutdown stops them all.
func TestJobRunsConcurrent(t *testing.T) {
	f := &fakeJobs{started: map[string]int{}, running: map[string]bool{}}
	var r jobRuns
	ctx := t.Context()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					r.owns("ns", "c", "u0")
				}
			}
		}()
	}
	for i := range 50 {
		wants := []jobWant{f.want("CronJob", "c", "cron", "f"), f.want("Job", "j", fmt.Sprint("u", i), "f")}
		stopped, _ := r.assign(ctx, wants, nil)
		for _, jr := range stopped {
			<-jr.done
		}
		if !r.owns("ns", "", fmt.Sprint("u", i)) || !r.owns("ns", "c", "") {
			t.Fatalf("sync %d: its Job or CronJob not owned", i)
		}
	}
	close(done)
	wg.Wait()
	r.stopAll()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started["cron"] != 1 || len(f.started) != 51 || len(f.running) > 0 {
		t.Fatalf("started %d goroutines (the CronJob's %d times), %d still running; want 51, once, none", len(f.started), f.started["cron"], len(f.running))
	}
}
