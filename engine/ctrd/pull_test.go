package ctrd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/errdefs"
	remoteerrors "github.com/containerd/containerd/remotes/errors"

	"github.com/podrun/podrun/engine"
)

// TestClassifyPull: the failures a retry may fix are ErrTemporary, refusals
// ErrUnauthorized, unknown images ErrNotFound; the message is kept.
func TestClassifyPull(t *testing.T) {
	refused := fmt.Errorf("failed to resolve reference: failed to do request: %w", &url.Error{Op: "Head", URL: "http://127.0.0.1:5000/v2/x/manifests/1",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}})
	timeout := fmt.Errorf("failed to do request: %w", &url.Error{Op: "Get", URL: "http://r/v2/", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}})
	status := func(code int) error {
		return fmt.Errorf("failed to resolve reference: %w", remoteerrors.ErrUnexpectedStatus{Status: fmt.Sprint(code), StatusCode: code})
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"connection refused", refused, engine.ErrTemporary},
		{"timeout", timeout, engine.ErrTemporary},
		{"truncated", fmt.Errorf("reading blob: %w", io.ErrUnexpectedEOF), engine.ErrTemporary},
		{"503", status(503), engine.ErrTemporary},
		{"429", status(429), engine.ErrTemporary},
		{"401", status(401), engine.ErrUnauthorized},
		{"403", status(403), engine.ErrUnauthorized},
		{"manifest unknown", fmt.Errorf("x:1: %w", errdefs.ErrNotFound), engine.ErrNotFound},
		{"400", status(400), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classifyPull(tc.err)
			for _, kind := range []error{engine.ErrTemporary, engine.ErrUnauthorized, engine.ErrNotFound} {
				if is := errors.Is(got, kind); is != (kind == tc.want) {
					t.Errorf("classifyPull(%v): errors.Is(%v) = %v", tc.err, kind, is)
				}
			}
			if got.Error() != tc.err.Error() && !errors.Is(got, engine.ErrNotFound) {
				t.Errorf("message changed: %q, want %q", got, tc.err)
			}
		})
	}
}

// TestAfterTry: a try given up for want of progress after reading
// something is made again, up to stalledTries; a stall that read nothing,
// or the last try, is a temporary failure naming the deadline; any other
// failure is classified as before.
func TestAfterTry(t *testing.T) {
	cut := errors.New("context canceled")
	for _, tc := range []struct {
		name      string
		err       error
		stalled   bool
		read      int64
		try       int
		again     bool
		temporary bool
		msg       string
	}{
		{"stalled after some bytes", cut, true, 100, 1, true, false, ""},
		{"stalled again after some bytes", cut, true, 100, stalledTries - 1, true, false, ""},
		{"the last try", cut, true, 100, stalledTries, false, true, "no progress for 1m0s (--image-pull-progress-deadline), 5 tries"},
		{"stalled without a byte", cut, true, 0, 1, false, true, "no progress for 1m0s"},
		{"not stalled: classified", fmt.Errorf("read: %w", syscall.ECONNRESET), false, 100, 1, false, true, "connection reset"},
		{"not stalled, not temporary", errors.New("bad manifest"), false, 100, 1, false, false, "bad manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again, err := afterTry(tc.err, tc.stalled, tc.read, tc.try, time.Minute)
			if again != tc.again {
				t.Fatalf("again = %v, want %v (err %v)", again, tc.again, err)
			}
			if again {
				if err != nil {
					t.Errorf("again with an error: %v", err)
				}
				return
			}
			if errors.Is(err, engine.ErrTemporary) != tc.temporary || !strings.Contains(err.Error(), tc.msg) || !errors.Is(err, tc.err) {
				t.Errorf("err %v: temporary %v, want %v, containing %q and wrapping %v", err, errors.Is(err, engine.ErrTemporary), tc.temporary, tc.msg, tc.err)
			}
		})
	}
}
