package updates

import (
	"strings"
	"testing"
	"time"
)

// zone is the node's local time in the tests: a fixed zone not UTC, so
// that a window read in UTC would fail.
var zone = time.FixedZone("NODE", 2*3600)

// at is a time in zone: 2026-11-30 is a Monday.
func at(day, h, m, s int) time.Time { return time.Date(2026, 11, day, h, m, s, 0, zone) }

func TestParseWindowRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "want [DAYS] HH:MM-HH:MM"},
		{"Mon Fri 02:00-04:00", "want [DAYS] HH:MM-HH:MM"},
		{"02:00", "want a time range"},
		{"Mon..Fry 02:00-04:00", `unknown weekday "Fry"`},
		{"Mo 02:00-04:00", `unknown weekday "Mo"`},
		{"24:00-02:00", "00:00 to 23:59:59"},
		{"02:60-03:00", "00:00 to 23:59:59"},
		{"02:00-03:00:61", "00:00 to 23:59:59"},
		{"2-3", "want HH:MM or HH:MM:SS"},
		{"02:0-03:00", "00:00 to 23:59:59"},
		{"02:00-02:00", "the window is empty"},
		{"-02:00-03:00", "want HH:MM"},
	} {
		_, err := ParseWindow(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseWindow(%q) = %v, want an error saying %q", tc.in, err, tc.want)
		}
	}
}

func TestWindowContainsAndNext(t *testing.T) {
	for _, tc := range []struct {
		window string
		now    time.Time
		in     bool
		next   time.Time
	}{
		// Every day, 02:00 to 04:00.
		{"02:00-04:00", at(30, 1, 59, 59), false, at(30, 2, 0, 0)},
		{"02:00-04:00", at(30, 2, 0, 0), true, at(31, 2, 0, 0)},
		{"02:00-04:00", at(30, 3, 59, 59), true, at(31, 2, 0, 0)},
		{"02:00-04:00", at(30, 4, 0, 0), false, at(31, 2, 0, 0)},
		// Weekdays: Saturday 5 Dec 03:00 is outside; the next is Monday 7 Dec.
		{"Mon..Fri 02:00-04:00", at(30+5, 3, 0, 0), false, at(30+7, 2, 0, 0)},
		{"Mon..Fri 02:00-04:00", at(30+4, 3, 0, 0), true, at(30+7, 2, 0, 0)},
		{"mon..friday 02:00-04:00", at(30, 3, 0, 0), true, at(31, 2, 0, 0)},
		// A range that wraps the week, and a list.
		{"Fri..Mon 02:00-04:00", at(30+1, 3, 0, 0), false, at(30+4, 2, 0, 0)},
		{"Fri..Mon 02:00-04:00", at(29, 3, 0, 0), true, at(30, 2, 0, 0)},
		{"Sat,Tue 02:00-04:00", at(30, 3, 0, 0), false, at(31, 2, 0, 0)},
		// Past midnight: Sunday 22:00 to Monday 06:00 belongs to Sunday.
		{"Sun 22:00-06:00", at(29, 21, 59, 0), false, at(29, 22, 0, 0)},
		{"Sun 22:00-06:00", at(29, 23, 0, 0), true, at(30+6, 22, 0, 0)},
		{"Sun 22:00-06:00", at(30, 5, 59, 59), true, at(30+6, 22, 0, 0)},
		{"Sun 22:00-06:00", at(30, 6, 0, 0), false, at(30+6, 22, 0, 0)},
		{"Sun 22:00-06:00", at(30, 23, 0, 0), false, at(30+6, 22, 0, 0)}, // Monday night is not Sunday's
		// Seconds, for a window a few seconds long.
		{"12:00:05-12:00:35", at(30, 12, 0, 4), false, at(30, 12, 0, 5)},
		{"12:00:05-12:00:35", at(30, 12, 0, 34), true, at(31, 12, 0, 5)},
	} {
		w, err := ParseWindow(tc.window)
		if err != nil {
			t.Fatalf("ParseWindow(%q): %v", tc.window, err)
		}
		if got := w.Contains(tc.now); got != tc.in {
			t.Errorf("%q.Contains(%s) = %v, want %v", tc.window, tc.now.Format(time.RFC1123), got, tc.in)
		}
		if got := w.Next(tc.now); !got.Equal(tc.next) {
			t.Errorf("%q.Next(%s) = %s, want %s", tc.window, tc.now.Format(time.RFC1123), got.Format(time.RFC1123), tc.next.Format(time.RFC1123))
		}
	}
}

// TestWindowLocalTime: the window is read in the location of the time
// asked about (the node's local time), not in UTC.
func TestWindowLocalTime(t *testing.T) {
	w, err := ParseWindow("02:00-04:00")
	if err != nil {
		t.Fatal(err)
	}
	now := at(30, 3, 0, 0) // 01:00 UTC
	if !w.Contains(now) || w.Contains(now.UTC()) {
		t.Errorf("Contains(03:00 local) = %v, Contains(01:00 UTC) = %v: want true, false", w.Contains(now), w.Contains(now.UTC()))
	}
}
