// Taking pods down for good: Down, by name, and removePod, by uid, each
// under the pod's lock (teardown.go's killPod does the stopping).

package run

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DownResult is one target's outcome.
type DownResult struct {
	Pod   string
	Found bool
	Err   error
}

// Down stops and removes the pods named by targets, concurrently. A pod
// that is not there is success (Found false). Each pod is taken down
// under its lock (lockPod), looked up once the lock is had; once every pod
// of the name is gone, so is the lock's file.
func (h *Host) Down(ctx context.Context, targets []Target, o DownOptions) []DownResult {
	results := make([]DownResult, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = DownResult{Pod: t.String()}
			pods, unlock, err := h.lockNamed(ctx, &t)
			if err != nil {
				results[i].Err = err
				return
			}
			defer func() { unlock(results[i].Err == nil) }()
			results[i].Pod = t.String()
			var errs []error
			for _, p := range pods {
				if p.Namespace == t.Namespace && p.Name == t.Name {
					results[i].Found = true
					errs = append(errs, h.downUID(ctx, p.UID, o.GracePeriod))
				}
			}
			if results[i].Found && errors.Join(errs...) == nil {
				errs = append(errs, h.versions.Forget(t.String())) // taken down for good
			}
			results[i].Err = errors.Join(errs...)
		}()
	}
	wg.Wait()
	return results
}

// lockNamed locks the pod *t names and lists the node's pods under that
// lock. A static pod named as in its file (Named) is locked, and *t set,
// by its full name.
func (h *Host) lockNamed(ctx context.Context, t *Target) ([]*PodInfo, func(gone bool), error) {
	unlock, err := h.lockPod(ctx, t.String(), 0)
	if err != nil {
		return nil, nil, err
	}
	pods, err := h.Pods(ctx)
	if err != nil {
		unlock(false)
		return nil, nil, err
	}
	named, err := Named(pods, *t)
	if err != nil || len(named) == 0 || named[0].Name == t.Name {
		if err != nil {
			unlock(false)
			return nil, nil, err
		}
		return pods, unlock, nil
	}
	unlock(true) // no pod has t's name itself
	*t = Target{Namespace: named[0].Namespace, Name: named[0].Name}
	return h.lockNamed(ctx, t)
}

// downUID terminates a pod and removes it (killPod: the kubelet's order,
// then the sandbox, the containers, the cgroup and the directory). Logs
// are kept. Every part tolerates "already gone", so a half-made pod is
// cleaned up too.
func (h *Host) downUID(ctx context.Context, uid string, override *time.Duration) error {
	h.unsupervise(uid)
	st, err := h.loadState(uid)
	if err != nil {
		return err
	}
	t := teardown{uid: uid, grace: defaultGrace, sandbox: true, remove: true}
	key := uid
	if st != nil && st.Pod != nil {
		t.pod, t.ips, t.grace = st.Pod, st.PodIPs, podGrace(st.Pod)
		key = st.Pod.Namespace + "/" + st.Pod.Name
	}
	if override != nil {
		t.grace = *override
	}
	start := h.clock.Now()
	err = h.killPod(ctx, t)
	h.report(Event{Pod: key, Step: "down", Elapsed: h.clock.Since(start), Err: err})
	return err
}

// DownUID takes pod uid down (downUID) without its lock: a CronJob's
// replaced Jobs' pods and those past its history limits.
func (h *Host) DownUID(ctx context.Context, uid string) error {
	return h.downUID(ctx, uid, nil)
}

// RemovePod takes pod uid, named key, down under its lock (a Job's
// deleted pod, a foreground up's pod at its end).
func (h *Host) RemovePod(ctx context.Context, key, uid string) error {
	unlock, err := h.lockPod(ctx, key, 0)
	if err != nil {
		return err
	}
	err = h.downUID(ctx, uid, nil)
	unlock(err == nil && h.podGone(ctx, key, []string{uid}))
	return err
}
