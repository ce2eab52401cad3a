package backoff

import (
	"reflect"
	"testing"
	"time"
)

func TestBackoffSchedule(t *testing.T) {
	var b Backoff
	var got []int
	for i := 0; i < 7; i++ {
		got = append(got, int(b.Delay(time.Second).Seconds()))
	}
	if want := []int{10, 20, 40, 80, 160, 300, 300}; !reflect.DeepEqual(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
	// An attempt that ran for 10 minutes resets the schedule; 9 minutes does not.
	if d := b.Delay(9 * time.Minute); d != 300*time.Second {
		t.Errorf("after 9 min running: %s, want 5m0s", d)
	}
	if d := b.Delay(10 * time.Minute); d != 10*time.Second {
		t.Errorf("after 10 min running: %s, want 10s", d)
	}
	if d := b.Delay(time.Second); d != 20*time.Second {
		t.Errorf("after reset, next: %s, want 20s", d)
	}
}

// TestResume: a supervisor that takes over a container restarted n times
// goes on with the delay after the n-th.
func TestResume(t *testing.T) {
	for n, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second} {
		var b Backoff
		b.Resume(n)
		if got := b.Delay(0); got != want {
			t.Errorf("after %d restarts: %v, want %v", n, got, want)
		}
	}
}
