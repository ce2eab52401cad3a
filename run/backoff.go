package run

import "time"

// The kubelet's container restart back-off.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second
	// backoffReset: a container that ran this long restarts with the initial delay again.
	backoffReset = 10 * time.Minute
)

// Backoff is one container's restart back-off: 10 s, doubling, capped at
// 300 s, and back to 10 s once an attempt has run for 10 minutes.
type Backoff struct {
	next time.Duration
}

// Delay returns how long to wait before the next restart of a container
// whose last attempt ran for ranFor, and advances the schedule.
func (b *Backoff) Delay(ranFor time.Duration) time.Duration {
	if b.next == 0 || ranFor >= backoffReset {
		b.next = backoffInitial
	}
	d := b.next
	b.next = min(2*b.next, backoffMax)
	return d
}
