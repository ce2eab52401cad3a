package images

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
)

const retryRef = "registry.example.com/team/app:1"

// now is an After that waits no time.
func now(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

// TestEnsureRetrying: a pull that may pass is retried with the back-off
// (10 s, 20 s, ...), each wait told first; one that cannot is returned at
// once; a BackingOff that fails, or the context's end, ends the retries.
func TestEnsureRetrying(t *testing.T) {
	refused := fmt.Errorf("dial tcp: connection refused: %w", engine.ErrTemporary)
	for _, tc := range []struct {
		name       string
		fails      []error
		backingOff error
		cancel     bool
		wantDelays []time.Duration
		wantErr    string // "" for success
	}{
		{"retried until it answers", []error{refused, refused}, nil, false, []time.Duration{10 * time.Second, 20 * time.Second}, ""},
		{"refused: at once", []error{fmt.Errorf("401: %w", engine.ErrUnauthorized)}, nil, false, nil, "401"},
		{"BackingOff fails", []error{refused}, errors.New("saving the state"), false, []time.Duration{10 * time.Second}, "saving the state"},
		{"the context ends", []error{refused}, nil, true, []time.Duration{10 * time.Second}, "gave up retrying: context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := fake.New()
			e.AddRemote(engine.Image{Ref: retryRef, Digest: "sha256:2"})
			for _, err := range tc.fails {
				e.Fail("Pull", err)
			}
			m := New(e, Options{}, time.Now)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			after := now
			if tc.cancel {
				after = func(time.Duration) <-chan time.Time { cancel(); return nil }
			}
			var delays []time.Duration
			img, err := m.EnsureRetrying(ctx, retryRef, corev1.PullAlways, nil, Retrying{After: after,
				BackingOff: func(failed *PullError, delay time.Duration) error {
					if failed.Reason != ReasonErrImagePull || !strings.Contains(failed.Err.Error(), "connection refused") {
						t.Errorf("told of %v, want the ErrImagePull that failed", failed)
					}
					delays = append(delays, delay)
					return tc.backingOff
				}})
			if !slices.Equal(delays, tc.wantDelays) {
				t.Errorf("waits %v, want %v", delays, tc.wantDelays)
			}
			switch {
			case tc.wantErr == "" && (err != nil || img.Digest != "sha256:2"):
				t.Errorf("EnsureRetrying = %+v, %v; want the image", img, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
