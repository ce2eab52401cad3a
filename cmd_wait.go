// podrun wait.

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/run"
)

// waitPoll is how often wait looks at the pods.
const waitPoll = 250 * time.Millisecond

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "wait for pods already started, as kubectl wait: --for ready (the Ready condition, or finished first), completion (Succeeded: exit 0, Failed: exit 1) or delete",
		ArgsUsage: "POD...",
		Flags: []cli.Flag{namespaceFlag(),
			&cli.StringFlag{Name: "for", Value: "ready", Usage: "ready, completion or delete"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up after this long (exit 1), as kubectl wait's"},
		},
		Action: func(c *cli.Context) error {
			cond := c.String("for")
			if cond != "ready" && cond != "completion" && cond != "delete" {
				return usageError{fmt.Sprintf("wait: --for must be ready, completion or delete, not %q", cond)}
			}
			if c.NArg() < 1 {
				return usageError{"wait: name one or more PODs (NAME or NAMESPACE/NAME)"}
			}
			var targets []run.Target
			for _, a := range c.Args().Slice() {
				t, err := podTarget(c, a)
				if err != nil {
					return err
				}
				targets = append(targets, t)
			}
			ctx, stop := signalContext(c)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
			defer cancel()
			return withHost(ctx, c, func(h *run.Host) error {
				var errs []error
				for _, t := range targets {
					msg, err := waitFor(ctx, h, t, cond)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					fmt.Printf("pod/%s %s\n", t, msg)
				}
				return errors.Join(errs...)
			})
		},
	}
}

// waitFor waits until pod t meets cond and says how; a pod that Failed
// (for ready or completion) is its failure, as up reports it.
func waitFor(ctx context.Context, h *run.Host, t run.Target, cond string) (string, error) {
	for {
		p, err := h.Pod(ctx, t)
		switch {
		case errors.Is(err, run.ErrNoPod) && cond == "delete":
			return "deleted", nil
		case err != nil:
			return "", fmt.Errorf("pod %s: %w", t, err)
		case cond == "delete":
		case p.Pod.Status.Phase == corev1.PodFailed:
			return "", h.Failure(p)
		case p.Pod.Status.Phase == corev1.PodSucceeded:
			return "condition met (Succeeded)", nil
		case cond == "ready" && podReady(p.Pod):
			return "condition met", nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", fmt.Errorf("timed out waiting for the condition on pod %s (--for %s)", t, cond)
			}
			return "", ctx.Err()
		case <-time.After(waitPoll):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
