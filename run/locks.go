package run

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// podLocks are the locks of the pods this process holds: a pod's lock is
// taken once per process and shared by whoever in the process changes the
// pod meanwhile (the pipeline, and its supervisor restarting a container
// before the pipeline has ended). Across processes, the Locks seam
// serializes (lock.Pods: flock, released by the kernel when a holder dies).
type podLocks struct {
	mu   sync.Mutex
	held map[string]*heldLock
}

type heldLock struct {
	n      int
	unlock func()
}

// lockPod takes pod key's lock: shared when this process holds it already,
// otherwise waited for, bounded by timeout (0: until ctx ends), saying once
// which podrun holds it.
func (h *Host) lockPod(ctx context.Context, key string, timeout time.Duration) (unlock func(), err error) {
	if release, ok := h.shareLock(key); ok {
		return release, nil
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	waiting := func(pid int) {
		h.report(Event{Pod: key, Msg: fmt.Sprintf("waiting for podrun (pid %d), which is changing this pod", pid)})
	}
	u, err := h.locks.Lock(ctx, key, waiting)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", key, err)
	}
	// No goroutine of ours holds it meanwhile: the lock excludes this
	// process's other descriptors too.
	h.podLocks.mu.Lock()
	h.podLocks.held[key] = &heldLock{n: 1, unlock: u}
	h.podLocks.mu.Unlock()
	return h.releaser(key), nil
}

// shareLock joins a lock this process holds.
func (h *Host) shareLock(key string) (func(), bool) {
	h.podLocks.mu.Lock()
	defer h.podLocks.mu.Unlock()
	hl := h.podLocks.held[key]
	if hl == nil {
		return nil, false
	}
	hl.n++
	return h.releaser(key), true
}

// releaser returns the release of one hold of key's lock (idempotent).
func (h *Host) releaser(key string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			h.podLocks.mu.Lock()
			defer h.podLocks.mu.Unlock()
			hl := h.podLocks.held[key]
			if hl == nil {
				return
			}
			if hl.n--; hl.n == 0 {
				delete(h.podLocks.held, key)
				hl.unlock()
			}
		})
	}
}

// localLocks serialize pods within this process only: the Locks of a Host
// given none (tests that run one Host).
type localLocks struct {
	mu   sync.Mutex
	keys map[string]chan struct{}
}

func (l *localLocks) Lock(ctx context.Context, key string, waiting func(int)) (func(), error) {
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]chan struct{}{}
	}
	ch := l.keys[key]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.keys[key] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
		if waiting != nil {
			waiting(0)
		}
		select {
		case ch <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return func() { <-ch }, nil
}
