// Package updates decides when the daemon may replace a running pod by
// its changed version (stage now, apply later): only inside an update
// window (Window, in the node's local time) and when the pod does not
// hold its update lock (LockHeld), the lock's hold bounded by a timeout
// (Decide, pure). The changed version's images are pulled meanwhile; a
// new pod and a removal are never held (the daemon's choice).
package updates

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is a weekly update window in the node's local time, written as
// systemd.time(7) writes weekdays, then a time range:
//
//	[DAYS] HH:MM[:SS]-HH:MM[:SS]
//
// DAYS is a comma-separated list of weekdays (Mon, Tue, Wed, Thu, Fri,
// Sat, Sun; the full English names too, any case) and ranges of them
// (Mon..Fri, Fri..Mon wraps), all days when left out. A range whose end is
// before its start (22:00-04:00) runs past midnight: it belongs to the day
// it starts on, as a window of Zincati's periodic strategy (days,
// start_time, length_minutes) does. Examples: "Mon..Fri 02:00-04:00",
// "Sat,Sun 22:30-06:00", "03:00-03:30".
type Window struct {
	days  [7]bool // by time.Weekday
	start clockTime
	end   clockTime
}

// clockTime is a time of day, in seconds since midnight.
type clockTime int

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// ParseWindow reads a Window.
func ParseWindow(s string) (Window, error) {
	var w Window
	fields := strings.Fields(s)
	var days, span string
	switch len(fields) {
	case 1:
		span = fields[0]
		for d := range w.days {
			w.days[d] = true
		}
	case 2:
		days, span = fields[0], fields[1]
		if err := w.parseDays(days); err != nil {
			return Window{}, fmt.Errorf("%q: %w", s, err)
		}
	default:
		return Window{}, fmt.Errorf("%q: want [DAYS] HH:MM-HH:MM, such as \"Mon..Fri 02:00-04:00\"", s)
	}
	from, to, ok := strings.Cut(span, "-")
	if !ok {
		return Window{}, fmt.Errorf("%q: want a time range HH:MM-HH:MM, got %q", s, span)
	}
	var err error
	if w.start, err = parseClock(from); err != nil {
		return Window{}, fmt.Errorf("%q: %w", s, err)
	}
	if w.end, err = parseClock(to); err != nil {
		return Window{}, fmt.Errorf("%q: %w", s, err)
	}
	if w.start == w.end {
		return Window{}, fmt.Errorf("%q: the window is empty (it ends when it starts)", s)
	}
	return w, nil
}

func (w *Window) parseDays(s string) error {
	for _, part := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(part, "..")
		first, ok := dayNames[strings.ToLower(from)]
		if !ok {
			return fmt.Errorf("unknown weekday %q (Mon, Tue, Wed, Thu, Fri, Sat, Sun; ranges as Mon..Fri)", from)
		}
		last := first
		if isRange {
			if last, ok = dayNames[strings.ToLower(to)]; !ok {
				return fmt.Errorf("unknown weekday %q (Mon, Tue, Wed, Thu, Fri, Sat, Sun; ranges as Mon..Fri)", to)
			}
		}
		for d := first; ; d = (d + 1) % 7 {
			w.days[d] = true
			if d == last {
				break
			}
		}
	}
	return nil
}

func parseClock(s string) (clockTime, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS", s)
	}
	limits := []int{23, 59, 59}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) != 2 && !(i == 0 && len(p) == 1) || n < 0 || n > limits[i] {
			return 0, fmt.Errorf("time %q: %w", s, errBadClock)
		}
		v[i] = n
	}
	return clockTime(v[0]*3600 + v[1]*60 + v[2]), nil
}

var errBadClock = errors.New("want HH:MM or HH:MM:SS, 00:00 to 23:59:59")

// length is how long the window lasts.
func (w Window) length() time.Duration {
	n := w.end - w.start
	if n < 0 {
		n += 24 * 3600
	}
	return time.Duration(n) * time.Second
}

// startOn is when the window starts on the day of t (in t's location),
// days later; ok is false when it does not start that day.
func (w Window) startOn(t time.Time, days int) (time.Time, bool) {
	y, m, d := t.Date()
	s := int(w.start)
	at := time.Date(y, m, d+days, s/3600, s/60%60, s%60, 0, t.Location())
	return at, w.days[at.Weekday()]
}

// Contains reports whether t is inside the window (in t's location: the
// daemon's clock gives the node's local time).
func (w Window) Contains(t time.Time) bool {
	for _, days := range []int{0, -1} { // a window of yesterday's runs past midnight
		if start, ok := w.startOn(t, days); ok && !t.Before(start) && t.Before(start.Add(w.length())) {
			return true
		}
	}
	return false
}

// Next is when the window next starts after t.
func (w Window) Next(t time.Time) time.Time {
	for days := 0; days <= 7; days++ {
		if start, ok := w.startOn(t, days); ok && start.After(t) {
			return start
		}
	}
	return time.Time{} // a window of no day: ParseWindow makes none
}
