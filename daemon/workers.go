package daemon

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

// workers are the daemon's per-pod workers, as the kubelet's podWorkers:
// each pod (by namespace/name) is changed by a goroutine of its own, so
// that a slow stop or start of one pod never delays another's create,
// replace or remove. While a pod's worker is busy, the latest wanted state
// waits for it; older ones are dropped. A start that another wanted state
// makes moot (the pod's file removed or changed while, say, its init
// container crash-loops) is cancelled, and undone, as the kubelet's
// UpdatePod cancels a pod's sync, instead of running until its deadline.
type workers struct {
	// sync makes one change: ctx ends when the change is made moot (or
	// the daemon stops), life only when the daemon stops (for what the
	// change leaves running after it, such as a watch of its progress).
	sync func(ctx, life context.Context, key string, j job) []run.Result

	mu       sync.Mutex
	busy     map[string]bool
	starting map[string]string // the uid of the pod being started (or kept), by key
	cancel   map[string]context.CancelFunc
	next     map[string]job
	last     map[string][]run.Result // each pod's latest outcome
	wg       sync.WaitGroup
	done     chan struct{} // a worker finished a change (capacity 1)
	// starts bounds the pods being started or replaced at once to what
	// the cores can do (a batch of 50 files makes the first pods Running
	// sooner than 50 pipelines sharing 2 cores); removals are not bounded.
	starts chan struct{}
}

// job is one wanted state of the node, as one sync saw it.
type job struct {
	want     run.Want
	snapshot []*run.PodInfo // the node then
	deadline *int32         // the pod's Deployment's progressDeadlineSeconds
	// stage is the pod's changed version held back (updates.go): its
	// images are pulled first; hold: and nothing else is done.
	stage *manifest.Pod
	hold  bool
}

func newWorkers(sync func(ctx, life context.Context, key string, j job) []run.Result) *workers {
	return &workers{sync: sync, busy: map[string]bool{}, starting: map[string]string{}, cancel: map[string]context.CancelFunc{},
		next: map[string]job{}, last: map[string][]run.Result{},
		done: make(chan struct{}, 1), starts: make(chan struct{}, max(4, 2*runtime.NumCPU()))}
}

// update hands pod key's wanted state to its worker, starting one if none
// runs.
func (ws *workers) update(ctx context.Context, key string, j job) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.busy[key] {
		ws.next[key] = j
		if uid, starting := ws.starting[key]; starting {
			if next, ok := wanted(j, key); !ok || next != uid {
				ws.cancel[key]()
			}
		}
		return
	}
	ws.busy[key] = true
	ws.wg.Add(1)
	go ws.work(ctx, key, j)
}

func (ws *workers) work(ctx context.Context, key string, j job) {
	defer ws.wg.Done()
	for {
		uid, start := wanted(j, key)
		sctx, cancel := context.WithCancel(ctx)
		ws.mu.Lock()
		if start {
			ws.starting[key] = uid
		}
		ws.cancel[key] = cancel
		ws.mu.Unlock()
		if start {
			ws.starts <- struct{}{}
		}
		rs := ws.sync(sctx, ctx, key, j)
		if start {
			<-ws.starts
		}
		cancel()
		ws.mu.Lock()
		delete(ws.starting, key)
		delete(ws.cancel, key)
		ws.last[key] = rs
		next, more := ws.next[key]
		delete(ws.next, key)
		if !more || ctx.Err() != nil {
			delete(ws.busy, key)
			more = false
		}
		ws.mu.Unlock()
		select {
		case ws.done <- struct{}{}:
		default:
		}
		if !more {
			return
		}
		j = next
	}
}

// wanted is the uid of the pod named key that j wants on the node; false
// when it wants none.
func wanted(j job, key string) (string, bool) {
	i := slices.IndexFunc(j.want.Pods, func(p *manifest.Pod) bool { return p.Pod != nil && p.Key() == key })
	if i < 0 {
		return "", false
	}
	return j.want.Pods[i].UID, true
}

// results are the latest outcome of every pod a worker has changed;
// forget drops the pods no longer wanted or on the node.
func (ws *workers) results(keep func(key string) bool) map[string][]run.Result {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := map[string][]run.Result{}
	for k, rs := range ws.last {
		if !keep(k) && !ws.busy[k] {
			delete(ws.last, k)
			continue
		}
		out[k] = rs
	}
	return out
}

// wait returns once every worker has finished.
func (ws *workers) wait() { ws.wg.Wait() }
