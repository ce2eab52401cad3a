// Package backoff is the kubelet's back-off (flowcontrol.Backoff as its
// doBackOff and image puller use it): 10 s, doubling, capped at 300 s, and
// back to the start once an attempt has run for more than 10 minutes. The supervisor
// restarts containers with it (the first restart at once) and the image
// manager retries pulls with it (the first retry after 10 s).
package backoff

import "time"

// The kubelet's back-off.
const (
	Initial = 10 * time.Second
	Max     = 300 * time.Second
	// Reset: an attempt that ran longer than this (the kubelet's
	// crashLoopBackOff.HasExpiredFunc: more than 600 s between the restart
	// and the exit) starts the schedule again.
	Reset = 10 * time.Minute
)

// Backoff is one schedule. The zero value waits Initial before the first
// retry (a pull); with FirstAtOnce the first retry is at once and the
// waits start from the second (a container restart: the kubelet's
// doBackOff finds no back-off entry at a container's first exit).
type Backoff struct {
	FirstAtOnce bool
	started     bool
	next        time.Duration
}

// Delay returns how long to wait before the next try after one that ran
// for ranFor, and advances the schedule.
func (b *Backoff) Delay(ranFor time.Duration) time.Duration {
	if !b.started || ranFor > Reset {
		b.started, b.next = true, Initial
		if b.FirstAtOnce {
			return 0
		}
	}
	d := b.next
	b.next = min(2*b.next, Max)
	return d
}

// Resume sets the schedule to where it is after n tries (a supervisor
// taking over a container restarted n times).
func (b *Backoff) Resume(n int) {
	b.started, b.next = n > 0 || !b.FirstAtOnce, Initial
	if b.FirstAtOnce {
		n-- // the first try waited nothing
	}
	for i := 0; i < n && b.next < Max; i++ {
		b.next = min(2*b.next, Max)
	}
}
