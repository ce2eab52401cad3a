package ctrd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

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
