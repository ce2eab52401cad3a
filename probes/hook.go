package probes

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
)

// Hook runs a lifecycle handler (postStart or preStop) and returns an error
// describing a failure. It runs until done or ctx ends; the caller bounds it
// (by the grace period for preStop).
//
// Like the kubelet: exec fails on a non-zero exit, and when a process it
// left running holds its output open past the engine's drain timeout;
// httpGet fails only when no response arrives (the status code is not
// checked); sleep fails when ctx ends first; tcpSocket is deprecated,
// unsupported and always fails.
func Hook(ctx context.Context, h *corev1.LifecycleHandler, t Target) error {
	switch {
	case h == nil:
		return errors.New("no lifecycle handler")
	case h.Exec != nil:
		code, output, err := runExec(ctx, t, h.Exec.Command, 0)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("exec hook %q did not finish: %w", h.Exec.Command, ctx.Err())
			}
			if errors.Is(err, engine.ErrOutputHeld) {
				// The kubelet's hook waits for the output for ever on
				// containerd's default, and fails past a drain timeout.
				return fmt.Errorf("exec hook: %w (a process it started in the background keeps its output: redirect it, e.g. `cmd >/dev/null 2>&1 &`)", err)
			}
			return fmt.Errorf("exec hook: %w", err)
		}
		if code != 0 {
			msg := fmt.Sprintf("exec hook %q exited with code %d", h.Exec.Command, code)
			if out := clip(output); out != "" {
				msg += ": " + out
			}
			return errors.New(msg)
		}
		return nil
	case h.HTTPGet != nil:
		if err := httpHook(ctx, h.HTTPGet, t); err != nil {
			return fmt.Errorf("http hook (path %q): %w", h.HTTPGet.Path, err)
		}
		return nil
	case h.Sleep != nil:
		return sleepHook(ctx, h.Sleep.Seconds)
	case h.TCPSocket != nil:
		return errors.New("tcpSocket lifecycle handlers are deprecated and not supported (the kubelet rejects them at runtime too)")
	default:
		return errors.New("lifecycle handler has no action (exec, httpGet or sleep)")
	}
}

func sleepHook(ctx context.Context, secs int64) error {
	if secs <= 0 {
		return nil
	}
	timer := time.NewTimer(time.Duration(secs) * time.Second)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("sleep hook (%ds): container terminated before sleep hook finished: %w", secs, ctx.Err())
	case <-timer.C:
		return nil
	}
}
