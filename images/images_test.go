package images

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
)

const remoteRef = "registry.example.com/team/remote:1"

// temporary is a pull failure containerd's client reports when the
// registry is down, marked as engine/ctrd marks it.
func temporary(msg string) error { return fmt.Errorf("%s: %w", msg, engine.ErrTemporary) }

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{pullError(remoteRef, temporary("dial tcp 127.0.0.1:5000: connect: connection refused")), true},
		{pullError(remoteRef, temporary("unexpected status: 503 Service Unavailable")), true},
		{pullError(remoteRef, fmt.Errorf("401 Unauthorized: %w", engine.ErrUnauthorized)), false},
		{pullError(remoteRef, fmt.Errorf("manifest unknown: %w", engine.ErrNotFound)), false},
		{pullError("Not A Ref", fmt.Errorf("%w: bad", engine.ErrInvalidImageName)), false},
		{&PullError{Reason: ReasonErrImageNeverPull, Image: remoteRef, Err: temporary("x")}, false},
		{pullError(remoteRef, errors.New("something else")), false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestPullBackoffSchedule: the kubelet's image back-off, 10 s doubling to
// 300 s per pod and image, starting over after 600 s without a failure.
func TestPullBackoffSchedule(t *testing.T) {
	var p pullBackoffs
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []time.Duration
	for range 7 {
		d := p.failed("uid_img", now, "boom")
		got = append(got, d)
		if msg, ok := p.waiting("uid_img", now.Add(d-time.Millisecond)); !ok || msg != "boom" {
			t.Fatalf("just before the end of a %v back-off: waiting %v %q", d, ok, msg)
		}
		if _, ok := p.waiting("uid_img", now.Add(d)); ok {
			t.Fatalf("at the end of a %v back-off: still waiting", d)
		}
		if _, ok := p.waiting("other_img", now); ok {
			t.Fatal("another pod's image is in back-off")
		}
		if next := p.next(now); !next.Equal(now.Add(d)) {
			t.Errorf("next = %v, want %v", next, now.Add(d))
		}
		now = now.Add(d)
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("back-offs %v, want %v", got, want)
	}
	if d := p.failed("uid_img", now.Add(601*time.Second), "again"); d != 10*time.Second {
		t.Errorf("after 601 s without failure: back-off %v, want 10s again", d)
	}
	p.forget("uid_img")
	if _, ok := p.waiting("uid_img", now); ok || !p.next(now).IsZero() {
		t.Error("still waiting after forget")
	}
}
