package updates

import (
	"fmt"
	"time"
)

// Reasons an update waits, or went ahead.
const (
	// ReasonWindow: no update window is open.
	ReasonWindow = "window"
	// ReasonLock: the pod holds its update lock.
	ReasonLock = "lock"
	// ReasonLockTimeout: the pod held its lock for longer than the
	// timeout; the update goes ahead anyway.
	ReasonLockTimeout = "lock timeout"
)

// Verdict is whether a pod's update is applied now, and why not.
type Verdict struct {
	Apply bool
	// Reason is why it waits (ReasonWindow, ReasonLock), or
	// ReasonLockTimeout when it goes ahead despite the lock; "" when it
	// goes ahead for nothing stops it.
	Reason string
	// Message says it for people: "update pending: window (the next
	// opens at ...)", "held by lock ...".
	Message string
	// At is when the verdict changes by time alone (a window opens, the
	// lock's hold reaches the timeout); zero when it does not.
	At time.Time
}

// Decide is whether a changed pod replaces the running one at now: only
// inside one of windows (none: always), and only when the running pod
// does not hold its update lock (lockHeld, seen held since heldSince),
// unless it held it for timeout or longer (0: no timeout). It is pure.
func Decide(now time.Time, windows []Window, lockHeld bool, heldSince time.Time, timeout time.Duration) Verdict {
	if !Open(windows, now) {
		next := nextStart(windows, now)
		return Verdict{Reason: ReasonWindow, At: next,
			Message: fmt.Sprintf("update pending: window (the next opens at %s)", next.Format("Mon 2006-01-02 15:04:05 MST"))}
	}
	if !lockHeld {
		return Verdict{Apply: true}
	}
	if heldSince.IsZero() || heldSince.After(now) {
		heldSince = now
	}
	held := now.Sub(heldSince)
	if timeout > 0 && held >= timeout {
		return Verdict{Apply: true, Reason: ReasonLockTimeout,
			Message: fmt.Sprintf("the pod held its update lock for %s, longer than the timeout %s: updated anyway", held.Round(time.Second), timeout)}
	}
	v := Verdict{Reason: ReasonLock, Message: fmt.Sprintf("held by lock (for %s", held.Round(time.Second))}
	if timeout > 0 {
		v.At = heldSince.Add(timeout)
		v.Message += fmt.Sprintf(", updated anyway at %s", v.At.Format("15:04:05 MST"))
	}
	v.Message += ")"
	return v
}

// Open reports whether updates may go ahead at t: one of windows contains
// it, or there is none.
func Open(windows []Window, t time.Time) bool {
	if len(windows) == 0 {
		return true
	}
	for _, w := range windows {
		if w.Contains(t) {
			return true
		}
	}
	return false
}

// nextStart is the earliest start of windows after t.
func nextStart(windows []Window, t time.Time) time.Time {
	var first time.Time
	for _, w := range windows {
		if n := w.Next(t); !n.IsZero() && (first.IsZero() || n.Before(first)) {
			first = n
		}
	}
	return first
}
