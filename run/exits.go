package run

import (
	"context"
	"sync"
	"time"

	"github.com/podrun/podrun/engine"
)

// exitRouter delivers containerd's task-exit events to whoever waits for a
// given container: one event subscription for the whole process, no polling.
type exitRouter struct {
	engine engine.Engine
	ctx    context.Context // the router's lifetime
	once   sync.Once
	mu     sync.Mutex
	subs   map[string]chan engine.TaskExit
}

// newExitRouter returns a router that lives until ctx ends.
func newExitRouter(ctx context.Context, e engine.Engine) *exitRouter {
	return &exitRouter{engine: e, ctx: ctx, subs: map[string]chan engine.TaskExit{}}
}

// resubscribeDelay is the pause before re-subscribing after the event
// stream broke (containerd restarting).
const resubscribeDelay = time.Second

// start subscribes once, for the router's lifetime; registering starts it.
func (x *exitRouter) start() {
	ctx := x.ctx
	x.once.Do(func() {
		ready := make(chan struct{})
		go x.loop(ctx, ready)
		<-ready
	})
}

func (x *exitRouter) loop(ctx context.Context, ready chan struct{}) {
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

func (x *exitRouter) deliverAll(ctx context.Context, exits <-chan engine.TaskExit, errs <-chan error) {
	for {
		select {
		case e, ok := <-exits:
			if !ok {
				return
			}
			x.deliver(e)
		case <-errs:
			return
		case <-ctx.Done():
			return
		}
	}
}

// register returns the channel that will receive id's exit. Register before
// starting the task so that no exit is missed.
func (x *exitRouter) register(id string) <-chan engine.TaskExit {
	x.start()
	x.mu.Lock()
	defer x.mu.Unlock()
	ch := make(chan engine.TaskExit, 1)
	x.subs[id] = ch
	return ch
}

func (x *exitRouter) unregister(id string) {
	x.mu.Lock()
	delete(x.subs, id)
	x.mu.Unlock()
}

// deliver hands an exit to its waiter, at most once.
func (x *exitRouter) deliver(e engine.TaskExit) {
	x.mu.Lock()
	ch := x.subs[e.ContainerID]
	delete(x.subs, e.ContainerID)
	x.mu.Unlock()
	if ch != nil {
		ch <- e
	}
}

// check delivers the exit of a registered container whose task has already
// stopped (an exit that happened before the stream saw it).
func (x *exitRouter) check(ctx context.Context, id string) {
	t, err := x.engine.Task(ctx, id)
	if err == nil && t.State == engine.TaskStopped {
		x.deliver(engine.TaskExit{ContainerID: id, Code: t.ExitCode, ExitedAt: t.ExitedAt})
	}
}

// reconcile checks every registered container after the stream reconnects.
func (x *exitRouter) reconcile(ctx context.Context) {
	x.mu.Lock()
	ids := make([]string, 0, len(x.subs))
	for id := range x.subs {
		ids = append(ids, id)
	}
	x.mu.Unlock()
	for _, id := range ids {
		x.check(ctx, id)
	}
}
