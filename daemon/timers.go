// The daemon's timers as plain data (schedule): when each named timer is
// due next. Run's loop only waits for the earliest and fires what is due.

package daemon

import (
	"cmp"
	"slices"
	"time"
)

// timerName names one of the daemon's timers.
type timerName string

const (
	// timerSync is a sync asked for by a file event, a retry after the
	// runtime did not answer, an image's pull back-off ending, a rollback.
	timerSync timerName = "sync"
	// timerResync is the periodic full re-scan (the backstop to inotify),
	// which also polls the URL: every Options.Resync.
	timerResync timerName = "resync"
	// timerLogGC removes the logs of pods that are gone: every logGCPeriod.
	timerLogGC timerName = "log-gc"
	// timerImageGC collects unused images: every imageGCPeriod.
	timerImageGC timerName = "image-gc"
)

// schedule is when each of the daemon's timers is due next. A periodic
// timer (every) stays scheduled, on its grid of periods, as a ticker does;
// a one-off (at) is gone once fired.
type schedule struct {
	due    map[timerName]time.Time
	period map[timerName]time.Duration // of the periodic timers
}

func newSchedule() *schedule {
	return &schedule{due: map[timerName]time.Time{}, period: map[timerName]time.Duration{}}
}

// every makes name periodic, first due at first and then every period.
func (s *schedule) every(name timerName, first time.Time, period time.Duration) {
	s.due[name], s.period[name] = first, period
}

// at asks for name at t; an earlier time already asked for stands.
func (s *schedule) at(name timerName, t time.Time) {
	if due, ok := s.due[name]; !ok || t.Before(due) {
		s.due[name] = t
	}
}

// next is how long from now the earliest timer is due (0 when it is
// overdue); ok is false when no timer is scheduled.
func (s *schedule) next(now time.Time) (wait time.Duration, ok bool) {
	var first time.Time
	for _, due := range s.due {
		if !ok || due.Before(first) {
			first, ok = due, true
		}
	}
	if !ok {
		return 0, false
	}
	return max(first.Sub(now), 0), true
}

// fire returns the timers due at now, earliest first (by name at the same
// time), each once however many of its periods have passed, as a ticker
// that drops the ticks nobody took. A one-off is forgotten; a periodic one
// is due next at the first of its periods after now.
func (s *schedule) fire(now time.Time) []timerName {
	var fired []timerName
	for name, due := range s.due {
		if !due.After(now) {
			fired = append(fired, name)
		}
	}
	slices.SortFunc(fired, func(a, b timerName) int {
		if c := s.due[a].Compare(s.due[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for _, name := range fired {
		p, periodic := s.period[name]
		if !periodic || p <= 0 {
			delete(s.due, name)
			continue
		}
		due := s.due[name]
		due = due.Add(p * (now.Sub(due)/p + 1)) // the first period boundary after now
		s.due[name] = due
	}
	return fired
}
