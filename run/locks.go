package run

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// A pod's lock makes one owner of a pod at a time: whoever creates,
// replaces, adopts, completes, ends (eviction, active deadline) or removes
// a pod holds it (lockPod) from before it looks at the pod until it is
// done, whichever process and goroutine it is.
//
//   - Across processes, the Locks seam excludes (lock.Pods: flock, released
//     by the kernel when a holder dies). A process takes it once per pod and
//     shares that hold among its goroutines (podLocks.held).
//   - Within this process, owners exclude each other (podLocks.owners).
//   - The supervisor of a pod this process runs joins the lock (joinPod)
//     for a restart or a probe's kill, without owning it: it shares the
//     owner's hold if there is one (the pipeline, an owner, waits for the
//     containers the supervisor starts: were the supervisor an owner, the
//     two would wait for each other), else it takes the lock across
//     processes. An owner that tears a pod down stops the pod's supervision
//     first (killPod), so an owner and a join never change a container at
//     once.
type podLocks struct {
	mu     sync.Mutex
	owners map[string]*owners
	held   map[string]*heldLock
}

// owners is the in-process exclusion of a pod's owners.
type owners struct {
	slot  chan struct{} // holds a token while an owner has the pod
	users int           // the owner and its waiters: the entry goes with the last
}

// heldLock is this process's hold of a pod's lock across processes.
type heldLock struct {
	n      int           // the holds sharing it: an owner's, the joins'
	ready  chan struct{} // closed once the lock is had, or could not be (err)
	err    error
	unlock func(gone bool)
	// gone: the last owner found the pod gone; its lock file goes with the
	// last hold.
	gone bool
}

// lockPod makes the caller pod key's owner, waiting for this process's
// other owner of the pod, then for the lock across processes (saying once
// which podrun holds it), bounded by timeout (0: until ctx ends).
// unlock(gone) gives it up; gone says the pod is no longer on the node, and
// its lock file is removed.
func (h *Host) lockPod(ctx context.Context, key string, timeout time.Duration) (unlock func(gone bool), err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	waiting := func(pid int) {
		h.report(Event{Pod: key, Msg: fmt.Sprintf("waiting for podrun (pid %d), which is changing this pod", pid)})
	}
	if err := h.podLocks.own(ctx, key, func() { waiting(os.Getpid()) }); err != nil {
		return nil, fmt.Errorf("pod %s: waiting for the lock: %w", key, err)
	}
	hl, err := h.joinLock(ctx, key, waiting)
	if err != nil {
		h.podLocks.disown(key)
		return nil, err
	}
	h.podLocks.mu.Lock()
	hl.gone = false // this owner's word counts now
	h.podLocks.mu.Unlock()
	var once sync.Once
	return func(gone bool) {
		once.Do(func() {
			h.podLocks.mu.Lock()
			hl.gone = gone
			h.podLocks.mu.Unlock()
			h.drop(key, hl)
			h.podLocks.disown(key)
		})
	}, nil
}

// joinPod joins pod key's lock for the supervisor: the hold of this
// process's owner of the pod, if any, else the lock across processes.
func (h *Host) joinPod(ctx context.Context, key string) (unlock func(), err error) {
	hl, err := h.joinLock(ctx, key, func(pid int) {
		h.report(Event{Pod: key, Msg: fmt.Sprintf("waiting for podrun (pid %d), which is changing this pod", pid)})
	})
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { h.drop(key, hl) }) }, nil
}

// own waits until no other goroutine of this process owns pod key, and
// makes the caller its owner; waiting is called if it has to wait.
func (pl *podLocks) own(ctx context.Context, key string, waiting func()) error {
	pl.mu.Lock()
	o := pl.owners[key]
	if o == nil {
		o = &owners{slot: make(chan struct{}, 1)}
		pl.owners[key] = o
	}
	o.users++
	pl.mu.Unlock()
	select {
	case o.slot <- struct{}{}:
		return nil
	default:
	}
	waiting()
	select {
	case o.slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		pl.leave(key, o)
		return ctx.Err()
	}
}

// disown ends the caller's ownership of pod key.
func (pl *podLocks) disown(key string) {
	pl.mu.Lock()
	o := pl.owners[key]
	pl.mu.Unlock()
	<-o.slot
	pl.leave(key, o)
}

// leave counts one user of o out, forgetting o with the last.
func (pl *podLocks) leave(key string, o *owners) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if o.users--; o.users == 0 {
		delete(pl.owners, key)
	}
}

// joinLock shares this process's hold of pod key's lock across processes,
// taking it when there is none (one descriptor per pod and process).
func (h *Host) joinLock(ctx context.Context, key string, waiting func(pid int)) (*heldLock, error) {
	pl := &h.podLocks
	for {
		pl.mu.Lock()
		hl := pl.held[key]
		if hl == nil {
			hl = &heldLock{n: 1, ready: make(chan struct{})}
			pl.held[key] = hl
			pl.mu.Unlock()
			unlock, err := h.locks.Lock(ctx, key, waiting)
			pl.mu.Lock()
			hl.unlock, hl.err = unlock, err
			if err != nil {
				delete(pl.held, key) // its waiters try again
			}
			close(hl.ready)
			pl.mu.Unlock()
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", key, err)
			}
			return hl, nil
		}
		hl.n++
		pl.mu.Unlock()
		select {
		case <-hl.ready:
		case <-ctx.Done():
			h.drop(key, hl)
			return nil, fmt.Errorf("pod %s: waiting for the lock: %w", key, ctx.Err())
		}
		if hl.err == nil {
			return hl, nil
		}
		pl.mu.Lock()
		hl.n--
		pl.mu.Unlock()
	}
}

// drop gives up one hold of hl; the last one releases the lock (removing
// its file when the pod is gone), unless it is still being taken (the
// taker then holds it).
func (h *Host) drop(key string, hl *heldLock) {
	pl := &h.podLocks
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if hl.n--; hl.n > 0 || hl.unlock == nil {
		return
	}
	if pl.held[key] == hl {
		delete(pl.held, key)
	}
	hl.unlock(hl.gone)
}

// podGone reports whether no pod named key is on the node any more: none
// of its containers, and no record of uids (the pods of that name seen
// before, the one wanted). An error is "not gone": the lock file stays.
func (h *Host) podGone(ctx context.Context, key string, uids []string) bool {
	pods, err := h.podsNamed(ctx, key, uids)
	return err == nil && len(pods) == 0
}

// localLocks serialize pods within this process only: the Locks of a Host
// given none (tests that run one Host, or several sharing one).
type localLocks struct {
	mu   sync.Mutex
	keys map[string]chan struct{}
}

func (l *localLocks) Lock(ctx context.Context, key string, waiting func(int)) (func(gone bool), error) {
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
	return func(bool) { <-ch }, nil
}
