package supervisor

import (
	"context"
	"sync"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
)

// Exits delivers containerd's task-exit events to whoever waits for a
// given container, with whether an OOM event for the container came first:
// one event subscription for the whole process, no polling.
type Exits struct {
	engine engine.Engine
	ctx    context.Context // the router's lifetime
	once   sync.Once
	mu     sync.Mutex
	subs   map[string]chan engine.Exit
	oom    map[string]bool // registered containers OOM-killed before their exit
}

// NewExits returns a router that lives until ctx ends.
func NewExits(ctx context.Context, e engine.Engine) *Exits {
	return &Exits{engine: e, ctx: ctx, subs: map[string]chan engine.Exit{}, oom: map[string]bool{}}
}

// resubscribeDelay is the pause before re-subscribing after the event
// stream broke (containerd restarting).
const resubscribeDelay = time.Second

// start subscribes once, for the router's lifetime; registering starts it.
func (x *Exits) start() {
	ctx := x.ctx
	x.once.Do(func() {
		ready := make(chan struct{})
		go x.loop(ctx, ready)
		<-ready
	})
}

func (x *Exits) loop(ctx context.Context, ready chan struct{}) {
	first := true
	defer func() {
		if first {
			close(ready) // ended before subscribing
		}
	}()
	for ctx.Err() == nil {
		exits, errs := x.engine.Exits(ctx)
		if first {
			close(ready)
			first = false
		} else {
			x.reconcile(ctx) // exits may have been missed while the stream was down
		}
		x.deliverAll(ctx, exits, errs)
		select {
		case <-ctx.Done():
		case <-time.After(resubscribeDelay):
		}
	}
}

func (x *Exits) deliverAll(ctx context.Context, exits <-chan engine.TaskExit, errs <-chan error) {
	for {
		select {
		case e, ok := <-exits:
			switch {
			case !ok:
				return
			case e.OOM:
				x.oomKilled(ctx, e.ContainerID)
			default:
				x.deliver(e.ContainerID, engine.Exit{Code: e.Code, ExitedAt: e.ExitedAt})
			}
		case <-errs:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Register returns the channel that will receive id's exit. Register before
// starting the task so that no exit is missed.
func (x *Exits) Register(id string) <-chan engine.Exit {
	x.start()
	x.mu.Lock()
	defer x.mu.Unlock()
	ch := make(chan engine.Exit, 1)
	x.subs[id] = ch
	return ch
}

func (x *Exits) Unregister(id string) {
	x.mu.Lock()
	delete(x.subs, id)
	delete(x.oom, id)
	x.mu.Unlock()
}

// deliver hands an exit to its waiter, at most once.
func (x *Exits) deliver(id string, e engine.Exit) {
	x.mu.Lock()
	ch := x.subs[id]
	delete(x.subs, id)
	e.OOMKilled = x.oom[id]
	delete(x.oom, id)
	x.mu.Unlock()
	if ch != nil {
		ch <- e
	}
}

// oomKilled records an OOM kill in container id, as the CRI plugin marks
// the container: on its labels, which status reads (also when its exit was
// delivered already, or someone else waits for it), and for the exit its
// waiter gets.
func (x *Exits) oomKilled(ctx context.Context, id string) {
	x.mu.Lock()
	if _, ok := x.subs[id]; ok {
		x.oom[id] = true
	}
	x.mu.Unlock()
	// A container being removed meanwhile has nothing left to mark.
	_ = x.engine.SetLabels(ctx, id, map[string]string{labels.Reason: status.ReasonOOMKilled})
}

// Check delivers the exit of a registered container whose task has already
// stopped (an exit that happened before the stream saw it).
func (x *Exits) Check(ctx context.Context, id string) {
	t, err := x.engine.Task(ctx, id)
	if err == nil && t.State == engine.TaskStopped {
		x.deliver(id, engine.Exit{Code: t.ExitCode, ExitedAt: t.ExitedAt})
	}
}

// reconcile checks every registered container after the stream reconnects.
func (x *Exits) reconcile(ctx context.Context) {
	x.mu.Lock()
	ids := make([]string, 0, len(x.subs))
	for id := range x.subs {
		ids = append(ids, id)
	}
	x.mu.Unlock()
	for _, id := range ids {
		x.Check(ctx, id)
	}
}
