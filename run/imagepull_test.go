package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/images"
)

const remoteRef = "registry.example.com/team/remote:1"

// temporary is a pull failure containerd's client reports when the
// registry is down, marked as engine/ctrd marks it.
func temporary(msg string) error { return fmt.Errorf("%s: %w", msg, engine.ErrTemporary) }

// TestUpRetriesTransientPulls: `up` retries a registry that does not
// answer with the back-off, says so, shows ImagePullBackOff meanwhile, and
// succeeds once the registry answers.
func TestUpRetriesTransientPulls(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: remoteRef}))
	hs.eng.AddRemote(engine.Image{Ref: remoteRef, Digest: "sha256:2"})
	refused := temporary("dial tcp 127.0.0.1:5000: connect: connection refused")
	hs.eng.Fail("Pull", refused)
	hs.eng.Fail("Pull", refused)
	hs.eng.Fail("Pull", refused)
	if err := hs.h.saveState(hs.r.state); err != nil {
		t.Fatal(err)
	}
	type result struct {
		img engine.Image
		err error
	}
	done := make(chan result, 1)
	go func() {
		img, err := hs.r.image(hs.ctx, remoteRef, corev1.PullAlways, nil)
		done <- result{img, err}
	}()
	for i, d := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		if asked := hs.clk.waitAsked(t, i+1); asked[i] != d {
			t.Fatalf("back-off #%d: %v, want %v", i+1, asked[i], d)
		}
		st, err := hs.h.loadState(testUID)
		if err != nil || st.ImagePull == nil || st.ImagePull.Reason != images.ReasonImagePullBackOff ||
			!strings.HasPrefix(st.ImagePull.Message, `Back-off pulling image "`+remoteRef+`": `) ||
			!strings.Contains(st.ImagePull.Message, "connection refused") {
			t.Fatalf("state while waiting: %+v, %v", st.ImagePull, err)
		}
		hs.clk.Advance(d)
	}
	r := <-done
	if r.err != nil || r.img.Digest != "sha256:2" {
		t.Fatalf("image = %+v, %v", r.img, r.err)
	}
	want := fmt.Sprintf(`ImagePullBackOff: back-off 10s pulling image %q: `, remoteRef)
	if msgs := hs.messages(); len(msgs) != 3 || !strings.HasPrefix(msgs[0], want) || !strings.Contains(msgs[0], "connection refused") ||
		!strings.Contains(msgs[1], "back-off 20s") || !strings.Contains(msgs[2], "back-off 40s") {
		t.Errorf("events %q, want three back-off lines starting %q", msgs, want)
	}
	if st, _ := hs.h.loadState(testUID); st.ImagePull != nil {
		t.Errorf("state after the pull: %+v, want no image wait", st.ImagePull)
	}
}

// TestUpFailsFastOnPermanentPullErrors: refusals and unknown images fail
// at once, without back-off.
func TestUpFailsFastOnPermanentPullErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		policy corev1.PullPolicy
		reason string
	}{
		{"unauthorized", fmt.Errorf("401 Unauthorized: %w", engine.ErrUnauthorized), corev1.PullAlways, images.ReasonErrImagePull},
		{"manifest unknown", fmt.Errorf("manifest unknown: %w", engine.ErrNotFound), corev1.PullAlways, images.ReasonErrImagePull},
		{"never", nil, corev1.PullNever, images.ReasonErrImageNeverPull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: remoteRef}))
			if tc.err != nil {
				hs.eng.Fail("Pull", tc.err)
			}
			_, err := hs.r.image(hs.ctx, remoteRef, tc.policy, nil)
			perr := (*images.PullError)(nil)
			if !errors.As(err, &perr) || perr.Reason != tc.reason {
				t.Fatalf("err = %v, want %s", err, tc.reason)
			}
			if asked := hs.clk.Asked(); len(asked) != 0 {
				t.Errorf("back-off waits %v, want none", asked)
			}
		})
	}
}

// TestUpGivesUpAtTimeout: transient failures are retried until the
// context ends, then fail with ErrImagePull and the registry's reason.
func TestUpGivesUpAtTimeout(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: remoteRef}))
	hs.eng.Fail("Pull", temporary("503 Service Unavailable"))
	if err := hs.h.saveState(hs.r.state); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(hs.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := hs.r.image(ctx, remoteRef, corev1.PullAlways, nil)
		done <- err
	}()
	hs.clk.waitAsked(t, 1)
	cancel()
	err := <-done
	perr := (*images.PullError)(nil)
	if !errors.As(err, &perr) || perr.Reason != images.ReasonErrImagePull || !strings.Contains(err.Error(), "503 Service Unavailable") ||
		!errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want ErrImagePull with the 503 and the context's end", err)
	}
}

// TestDaemonPullBackOff: with PullBackOff, a failed pull fails at once
// with ErrImagePull; until the back-off ends, ImagePullBackOff without
// pulling; then the image is pulled again, and the back-off doubles.
func TestDaemonPullBackOff(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: remoteRef}))
	hs.r.pullBackOff = true
	hs.eng.AddRemote(engine.Image{Ref: remoteRef, Digest: "sha256:2"})
	hs.eng.Fail("Pull", fmt.Errorf("manifest unknown: %w", engine.ErrNotFound))
	hs.eng.Fail("Pull", fmt.Errorf("manifest unknown: %w", engine.ErrNotFound))
	pulls := func() int {
		n := 0
		for _, c := range hs.eng.Calls() {
			if strings.HasPrefix(c, "Pull ") {
				n++
			}
		}
		return n
	}
	try := func() *images.PullError {
		_, err := hs.r.image(hs.ctx, remoteRef, corev1.PullAlways, nil)
		if err == nil {
			return nil
		}
		perr := (*images.PullError)(nil)
		if !errors.As(err, &perr) {
			t.Fatalf("err = %v, not an ImagePullError", err)
		}
		return perr
	}
	if perr := try(); perr == nil || perr.Reason != images.ReasonErrImagePull || pulls() != 1 {
		t.Fatalf("first try: %v after %d pulls, want ErrImagePull after 1", perr, pulls())
	}
	hs.clk.Advance(9 * time.Second)
	perr := try()
	if perr == nil || perr.Reason != images.ReasonImagePullBackOff || pulls() != 1 ||
		perr.Err.Error() != fmt.Sprintf(`Back-off pulling image %q: ErrImagePull: failed to pull and unpack image %[1]q: manifest unknown: not found`, remoteRef) {
		t.Fatalf("within the back-off: %v after %d pulls, want ImagePullBackOff with the last failure, no pull", perr, pulls())
	}
	if next := hs.h.Images().NextRetry(); !next.Equal(hs.clk.Now().Add(time.Second)) {
		t.Errorf("NextPullRetry = %v, want in 1 s", next)
	}
	hs.clk.Advance(time.Second)
	if perr := try(); perr == nil || perr.Reason != images.ReasonErrImagePull || pulls() != 2 {
		t.Fatalf("after 10 s: %v after %d pulls, want ErrImagePull after 2", perr, pulls())
	}
	hs.clk.Advance(19 * time.Second)
	if perr := try(); perr == nil || perr.Reason != images.ReasonImagePullBackOff || pulls() != 2 {
		t.Fatalf("19 s into the second back-off: %v after %d pulls, want ImagePullBackOff (20 s)", perr, pulls())
	}
	hs.clk.Advance(time.Second)
	if perr := try(); perr != nil || pulls() != 3 {
		t.Fatalf("after 20 s: %v after %d pulls, want the image", perr, pulls())
	}
	if !hs.h.Images().NextRetry().IsZero() {
		t.Error("a back-off is left after the pull succeeded")
	}
}
