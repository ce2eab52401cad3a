// podrun attach.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/console"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/run"
)

func attachCommand() *cli.Command {
	return &cli.Command{
		Name:  "attach",
		Usage: "attach to a running container's streams, like kubectl attach",
		Description: "Shows the container's output from now on; with -i, sends stdin to a container that has stdin: true.\n" +
			"With a terminal (tty: true), ctrl-p ctrl-q detaches; the container keeps running either way\n" +
			"(with stdinOnce, its stdin closes when the first attach ends).",
		ArgsUsage: "POD",
		Flags: []cli.Flag{
			namespaceFlag(podNamespace),
			containerFlag(),
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the container"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "stdin is a terminal"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := config(c)
			if err != nil {
				return err
			}
			return withContainer(c, func(h *run.Host, p *run.PodInfo, name string) error {
				cur := p.Current(name)
				if cur == nil || cur.Task.State != engine.TaskRunning {
					return fmt.Errorf("container %q of pod %s/%s is not running", name, p.Namespace, p.Name)
				}
				spec := attach.ContainerSpec(p.Pod, name)
				if spec == nil {
					return fmt.Errorf("container %q of pod %s/%s has no spec recorded", name, p.Namespace, p.Name)
				}
				m, err := attach.ModeOf(spec, c.Bool("stdin"), c.Bool("tty"))
				if m.NoTTY {
					// kubectl's words and behaviour: go on without one.
					fmt.Fprintf(os.Stderr, "error: Unable to use a TTY - container %s did not allocate one\n", name)
				}
				if err != nil {
					return fmt.Errorf("container %q of pod %s/%s %w", name, p.Namespace, p.Name, err)
				}
				ctx, stop := signalContext(c)
				defer stop()
				if m.Log {
					dir := h.LogDir(p, name)
					restart, err := logs.Latest(dir)
					if err != nil {
						return fmt.Errorf("container %q of pod %s/%s has no log yet: %w", name, p.Namespace, p.Name, err)
					}
					return logs.Copy(ctx, os.Stdout, dir, restart, logs.Options{Tail: 0, Follow: true})
				}
				o := attach.Options{Stdout: os.Stdout, Stderr: os.Stderr}
				if m.Stdin {
					o.Stdin = os.Stdin
					if m.TTY {
						restore, err := console.Raw(os.Stdin)
						if err != nil {
							return err
						}
						defer restore()
						o.Detach = attach.DetachKeys
						defer console.ForwardResize(ctx, os.Stdin, func(ctx context.Context, width, height uint32) {
							_ = h.Engine().Resize(ctx, cur.ID, width, height) // a lost resize leaves the old size
						})()
					}
				}
				err = attach.Attach(ctx, filepath.Join(ioDir(cfg), cur.ID), o)
				switch {
				case errors.Is(err, attach.ErrNoKeeper):
					return fmt.Errorf("container %q of pod %s/%s: %w", name, p.Namespace, p.Name, err)
				case ctx.Err() != nil && c.Context.Err() == nil:
					return nil // SIGINT or SIGTERM: detached, the container runs on
				}
				return err
			})
		},
	}
}
