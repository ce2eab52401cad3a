// The fake's task exits: Exits and its subscribers.

package fake

import (
	"context"
	"sync"

	"github.com/podrun/podrun/engine"
)

// Exits streams task exits from now until ctx ends or BreakExits.
func (e *Engine) Exits(ctx context.Context) (<-chan engine.TaskExit, <-chan error) {
	out := make(chan engine.TaskExit)
	errc := make(chan error, 1)
	e.mu.Lock()
	err := e.begin(ctx, "Exits")
	if err != nil {
		e.mu.Unlock()
		if ctx.Err() == nil {
			errc <- err
		}
		close(out)
		return out, errc
	}
	s := &subscriber{wake: make(chan struct{}, 1)}
	e.subs[s] = struct{}{}
	e.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			e.mu.Lock()
			delete(e.subs, s)
			e.mu.Unlock()
		}()
		for {
			ev, ok, brk := s.pop()
			if ok {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				continue
			}
			if brk != nil {
				errc <- brk
				return
			}
			select {
			case <-s.wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, errc
}

// exitLocked ends a live task: waiters return, subscribers get an event.
func (e *Engine) exitLocked(id string, t *task, code uint32) {
	t.state = engine.TaskStopped
	t.code = code
	t.exitedAt = e.now()
	closeOnce(t)
	ev := engine.TaskExit{ContainerID: id, Code: code, ExitedAt: t.exitedAt}
	for s := range e.subs {
		s.push(&ev, nil)
	}
}

func closeOnce(t *task) {
	select {
	case <-t.done:
	default:
		close(t.done)
	}
}

// subscriber queues events for one Exits stream so that producers never block.
type subscriber struct {
	mu     sync.Mutex
	queue  []engine.TaskExit
	broken error
	wake   chan struct{} // capacity 1
}

func (s *subscriber) push(ev *engine.TaskExit, broken error) {
	s.mu.Lock()
	if ev != nil {
		s.queue = append(s.queue, *ev)
	}
	if broken != nil {
		s.broken = broken
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) pop() (engine.TaskExit, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		ev := s.queue[0]
		s.queue = s.queue[1:]
		return ev, true, nil
	}
	return engine.TaskExit{}, false, s.broken
}
