package backoff

import (
	"reflect"
	"testing"
	"time"
)

func seconds(b *Backoff, n int, ranFor time.Duration) []int {
	var got []int
	for range n {
		got = append(got, int(b.Delay(ranFor).Seconds()))
	}
	return got
}

// TestPullSchedule: a pull waits 10 s before its first retry, doubling to 300 s.
func TestPullSchedule(t *testing.T) {
	var b Backoff
	if got, want := seconds(&b, 7, time.Second), []int{10, 20, 40, 80, 160, 300, 300}; !reflect.DeepEqual(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
	// An attempt that ran for more than 10 minutes resets the schedule;
	// 10 minutes exactly does not (the kubelet's expiry is "> 600 s").
	if d := b.Delay(10 * time.Minute); d != 300*time.Second {
		t.Errorf("after 10 min running: %s, want 5m0s", d)
	}
	if d := b.Delay(10*time.Minute + time.Millisecond); d != 10*time.Second {
		t.Errorf("after 10m0.001s running: %s, want 10s", d)
	}
	if d := b.Delay(time.Second); d != 20*time.Second {
		t.Errorf("after reset, next: %s, want 20s", d)
	}
}

// TestRestartSchedule: a container restarts at once after its first exit,
// then after 10 s, 20 s, ... 300 s; one that ran more than 10 minutes
// restarts at once again.
func TestRestartSchedule(t *testing.T) {
	b := Backoff{FirstAtOnce: true}
	if got, want := seconds(&b, 8, time.Second), []int{0, 10, 20, 40, 80, 160, 300, 300}; !reflect.DeepEqual(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
	if d := b.Delay(10 * time.Minute); d != 300*time.Second {
		t.Errorf("after 10m running: %s, want 5m0s", d)
	}
	if got, want := seconds(&b, 1, 10*time.Minute+time.Second), []int{0}; !reflect.DeepEqual(got, want) {
		t.Errorf("after 10m01s running: %v, want %v", got, want)
	}
	if got, want := seconds(&b, 3, time.Second), []int{10, 20, 40}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the reset: %v, want %v", got, want)
	}
}

// TestResume: a supervisor that takes over after n tries goes on with the
// delay after the n-th.
func TestResume(t *testing.T) {
	for _, tc := range []struct {
		atOnce bool
		want   []int // seconds, after 0, 1, 2, ... tries
	}{
		{false, []int{10, 20, 40, 80, 160, 300, 300}},
		{true, []int{0, 10, 20, 40, 80, 160, 300, 300}},
	} {
		for n, want := range tc.want {
			b := Backoff{FirstAtOnce: tc.atOnce}
			b.Resume(n)
			if got := b.Delay(0); got != time.Duration(want)*time.Second {
				t.Errorf("FirstAtOnce %v, after %d tries: %v, want %ds", tc.atOnce, n, got, want)
			}
		}
	}
}
