// Package backoff is the kubelet's restart back-off: 10 s, doubling, capped
// at 300 s, and back to 10 s once an attempt has run for 10 minutes. The
// supervisor restarts containers with it and the image manager retries
// pulls with it.
package backoff

import "time"

// The kubelet's back-off.
const (
	Initial = 10 * time.Second
	Max     = 300 * time.Second
	// Reset: a container that ran this long restarts with the initial delay again.
	Reset = 10 * time.Minute
)

// Backoff is one schedule. The zero value starts at Initial.
type Backoff struct {
	next time.Duration
}

// Delay returns how long to wait before the next try after one that ran
// for ranFor, and advances the schedule.
func (b *Backoff) Delay(ranFor time.Duration) time.Duration {
	if b.next == 0 || ranFor >= Reset {
		b.next = Initial
	}
	d := b.next
	b.next = min(2*b.next, Max)
	return d
}

// Resume sets the schedule to where it is after n delays (a supervisor
// taking over a container restarted n times).
func (b *Backoff) Resume(n int) {
	b.next = Initial
	for i := 0; i < n && b.next < Max; i++ {
		b.next = min(2*b.next, Max)
	}
}
