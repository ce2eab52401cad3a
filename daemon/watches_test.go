package daemon

import (
	"fmt"
	"sync"
	"testing"
)

// TestWatches: a pod's progress is watched once per uid until forgotten;
// forgetting an older uid leaves a newer one's watch, and keep drops the
// pods of no source.
func TestWatches(t *testing.T) {
	type op struct {
		do       string // start, forget, keep
		key, uid string
		keep     []string // keys kept, for keep
		want     bool     // start's answer
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"first start watches", []op{{do: "start", key: "ns/a", uid: "1", want: true}}},
		{"a second start does not", []op{
			{do: "start", key: "ns/a", uid: "1", want: true},
			{do: "start", key: "ns/a", uid: "1", want: false}}},
		{"a new uid is watched", []op{
			{do: "start", key: "ns/a", uid: "1", want: true},
			{do: "start", key: "ns/a", uid: "2", want: true},
			{do: "start", key: "ns/a", uid: "1", want: true}}}, // back to 1: watched again
		{"forgotten is watched again", []op{
			{do: "start", key: "ns/a", uid: "1", want: true},
			{do: "forget", key: "ns/a", uid: "1"},
			{do: "start", key: "ns/a", uid: "1", want: true}}},
		{"forgetting an older uid keeps the newer", []op{
			{do: "start", key: "ns/a", uid: "1", want: true},
			{do: "start", key: "ns/a", uid: "2", want: true},
			{do: "forget", key: "ns/a", uid: "1"},
			{do: "start", key: "ns/a", uid: "2", want: false}}},
		{"forgetting what is not watched", []op{
			{do: "forget", key: "ns/a", uid: "1"},
			{do: "start", key: "ns/a", uid: "1", want: true}}},
		{"keep drops the pods of no source", []op{
			{do: "start", key: "ns/a", uid: "1", want: true},
			{do: "start", key: "ns/b", uid: "1", want: true},
			{do: "keep", keep: []string{"ns/b"}},
			{do: "start", key: "ns/a", uid: "1", want: true},
			{do: "start", key: "ns/b", uid: "1", want: false}}},
		{"keep on nothing watched", []op{
			{do: "keep", keep: nil},
			{do: "start", key: "ns/a", uid: "1", want: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w watches
			for i, o := range tc.ops {
				switch o.do {
				case "start":
					if got := w.start(o.key, o.uid); got != o.want {
						t.Fatalf("op %d: start(%s, %s) = %v, want %v", i, o.key, o.uid, got, o.want)
					}
				case "forget":
					w.forget(o.key, o.uid)
				case "keep":
					kept := map[string]bool{}
					for _, k := range o.keep {
						kept[k] = true
					}
					w.keep(func(k string) bool { return kept[k] })
				}
			}
		})
	}
}

// TestWatchesConcurrent (run with -race): workers start watches, the
// watches' goroutines forget them and the sync keeps the pods of its
// sources, at once; each pod's start answers true exactly once per uid
// while nothing forgets it.
func TestWatchesConcurrent(t *testing.T) {
	var w watches
	var wg sync.WaitGroup
	var mu sync.Mutex
	started := map[string]int{}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				key := fmt.Sprint("ns/p", i%10)
				if w.start(key, "stable") {
					mu.Lock()
					started[key]++
					mu.Unlock()
				}
				w.start(fmt.Sprint("ns/q", g), fmt.Sprint(i))
				w.forget(fmt.Sprint("ns/q", g), fmt.Sprint(i))
				w.keep(func(string) bool { return true })
			}
		}()
	}
	wg.Wait()
	for i := range 10 {
		if key := fmt.Sprint("ns/p", i); started[key] != 1 {
			t.Errorf("%s started %d times, want once", key, started[key])
		}
	}
}
