package daemon

import (
	"fmt"
	"testing"
	"time"
)

func TestScheduleNextAndFire(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		op   string // "at", "every", "next", "fire"
		name timerName
		when time.Duration // at/every: the due time; next/fire: now
		per  time.Duration // every: the period
		want string        // next: the wait ("none" when nothing is scheduled); fire: the timers fired
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"nothing scheduled", []step{
			{op: "next", want: "none"},
			{op: "fire", when: time.Hour, want: "[]"},
		}},
		{"a one-off fires once, then is gone", []step{
			{op: "at", name: timerSync, when: 5 * time.Second},
			{op: "next", when: 2 * time.Second, want: "3s"},
			{op: "fire", when: 4 * time.Second, want: "[]"},
			{op: "fire", when: 5 * time.Second, want: "[sync]"},
			{op: "next", when: 5 * time.Second, want: "none"},
		}},
		{"the earliest request stands", []step{
			{op: "at", name: timerSync, when: 5 * time.Second},
			{op: "at", name: timerSync, when: 9 * time.Second},
			{op: "next", want: "5s"},
			{op: "at", name: timerSync, when: time.Second},
			{op: "next", want: "1s"},
		}},
		{"overdue waits nothing", []step{
			{op: "at", name: timerSync, when: time.Second},
			{op: "next", when: time.Minute, want: "0s"},
		}},
		{"periodic stays on its grid", []step{
			{op: "every", name: timerResync, when: 10 * time.Second, per: 10 * time.Second},
			{op: "next", want: "10s"},
			{op: "fire", when: 10 * time.Second, want: "[resync]"},
			{op: "next", when: 10 * time.Second, want: "10s"},
			{op: "fire", when: 21 * time.Second, want: "[resync]"}, // late: the next is still at 30 s
			{op: "next", when: 21 * time.Second, want: "9s"},
		}},
		{"periodic missed several periods fires once", []step{
			{op: "every", name: timerResync, when: 10 * time.Second, per: 10 * time.Second},
			{op: "fire", when: 45 * time.Second, want: "[resync]"},
			{op: "fire", when: 45 * time.Second, want: "[]"},
			{op: "next", when: 45 * time.Second, want: "5s"},
		}},
		{"periodic due at start fires at once", []step{
			{op: "every", name: timerLogGC, when: 0, per: time.Hour},
			{op: "next", want: "0s"},
			{op: "fire", want: "[log-gc]"},
			{op: "next", want: "1h0m0s"},
		}},
		{"several due fire earliest first, then by name", []step{
			{op: "every", name: timerResync, when: 3 * time.Second, per: time.Minute},
			{op: "every", name: timerLogGC, when: 0, per: time.Hour},
			{op: "every", name: timerImageGC, when: 0, per: 5 * time.Minute},
			{op: "at", name: timerSync, when: 2 * time.Second},
			{op: "fire", when: 2 * time.Second, want: "[image-gc log-gc sync]"},
			{op: "next", when: 2 * time.Second, want: "1s"},
			{op: "fire", when: 3 * time.Second, want: "[resync]"},
		}},
		{"a one-off asked for while a periodic one runs", []step{
			{op: "every", name: timerResync, when: time.Minute, per: time.Minute},
			{op: "at", name: timerSync, when: 5 * time.Millisecond},
			{op: "next", want: "5ms"},
			{op: "fire", when: 5 * time.Millisecond, want: "[sync]"},
			{op: "next", when: 5 * time.Millisecond, want: "59.995s"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSchedule()
			for i, st := range tt.steps {
				switch st.op {
				case "at":
					s.at(st.name, at(st.when))
				case "every":
					s.every(st.name, at(st.when), st.per)
				case "next":
					got := "none"
					if wait, ok := s.next(at(st.when)); ok {
						got = wait.String()
					}
					if got != st.want {
						t.Errorf("step %d: next = %s, want %s", i, got, st.want)
					}
				case "fire":
					if got := fmt.Sprint(s.fire(at(st.when))); got != st.want {
						t.Errorf("step %d: fire = %s, want %s", i, got, st.want)
					}
				}
			}
		})
	}
}
