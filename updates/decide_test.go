package updates

import (
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestDecide(t *testing.T) {
	night, err := ParseWindow("02:00-04:00")
	if err != nil {
		t.Fatal(err)
	}
	weekend, err := ParseWindow("Sat,Sun 12:00-13:00")
	if err != nil {
		t.Fatal(err)
	}
	clk := testclock.NewFakePassiveClock(at(30, 1, 0, 0)) // Monday 01:00
	for _, tc := range []struct {
		name      string
		step      time.Duration // the clock moved since Monday 01:00
		windows   []Window
		lockHeld  bool
		heldSince time.Time
		timeout   time.Duration
		want      Verdict
		saying    string
	}{
		{name: "no window, no lock", want: Verdict{Apply: true}},
		{name: "outside the window", windows: []Window{night},
			want: Verdict{Reason: ReasonWindow, At: at(30, 2, 0, 0)}, saying: "update pending: window (the next opens at Mon 2026-11-30 02:00:00 NODE)"},
		{name: "outside every window: the earliest next", windows: []Window{weekend, night}, step: 3 * time.Hour,
			want: Verdict{Reason: ReasonWindow, At: at(31, 2, 0, 0)}},
		{name: "inside one of them", windows: []Window{weekend, night}, step: time.Hour, want: Verdict{Apply: true}},
		{name: "the window wins over the lock", windows: []Window{night}, lockHeld: true, heldSince: at(29, 0, 0, 0), timeout: time.Minute,
			want: Verdict{Reason: ReasonWindow, At: at(30, 2, 0, 0)}},
		{name: "held by lock, first seen now", lockHeld: true, timeout: time.Hour,
			want: Verdict{Reason: ReasonLock, At: at(30, 2, 0, 0)}, saying: "held by lock (for 0s, updated anyway at 02:00:00 NODE)"},
		{name: "held by lock for a while", lockHeld: true, heldSince: at(30, 0, 30, 0), timeout: time.Hour,
			want: Verdict{Reason: ReasonLock, At: at(30, 1, 30, 0)}, saying: "held by lock (for 30m0s"},
		{name: "held by lock, no timeout", lockHeld: true, heldSince: at(29, 0, 0, 0),
			want: Verdict{Reason: ReasonLock}, saying: "held by lock (for 25h0m0s)"},
		{name: "held up to the timeout: goes ahead", lockHeld: true, heldSince: at(30, 0, 0, 0), timeout: time.Hour,
			want: Verdict{Apply: true, Reason: ReasonLockTimeout}, saying: "held its update lock for 1h0m0s, longer than the timeout 1h0m0s: updated anyway"},
		{name: "held past the timeout, inside the window", windows: []Window{night}, step: time.Hour + 30*time.Minute, lockHeld: true,
			heldSince: at(30, 2, 0, 0), timeout: 30 * time.Minute, want: Verdict{Apply: true, Reason: ReasonLockTimeout}},
		{name: "a hold since a time not yet come counts from now", lockHeld: true, heldSince: at(30, 5, 0, 0), timeout: time.Hour,
			want: Verdict{Reason: ReasonLock, At: at(30, 2, 0, 0)}},
		{name: "the lock let go", lockHeld: false, heldSince: at(30, 0, 30, 0), timeout: time.Hour, want: Verdict{Apply: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk.SetTime(at(30, 1, 0, 0).Add(tc.step))
			got := Decide(clk.Now(), tc.windows, tc.lockHeld, tc.heldSince, tc.timeout)
			if got.Apply != tc.want.Apply || got.Reason != tc.want.Reason || !got.At.Equal(tc.want.At) {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
			if !strings.Contains(got.Message, tc.saying) || (got.Reason != "") != (got.Message != "") {
				t.Errorf("message %q, want one saying %q (and one only with a reason)", got.Message, tc.saying)
			}
		})
	}
}
