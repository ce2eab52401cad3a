// podrun wait.

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/await"
	"github.com/podrun/podrun/run"
)

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:  "wait",
		Usage: "wait for pods already started, as kubectl wait",
		Description: "--for ready: the Ready condition, or finished first; completion: Succeeded (exit 0) or\n" +
			"Failed (exit 1); delete: gone.",
		ArgsUsage: "POD...",
		Flags: []cli.Flag{namespaceFlag("namespace of each POD given as a NAME (default: default)"),
			&cli.StringFlag{Name: "for", Value: "ready", Usage: "ready, completion or delete"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up after this long (exit 1), as kubectl wait's"},
		},
		Action: func(c *cli.Context) error {
			cond := await.Condition(c.String("for"))
			if cond != await.ForReady && cond != await.ForCompletion && cond != await.ForDelete {
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
					msg, err := await.Await(ctx, h, t, cond)
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
