// podrun exec.

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/console"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/run"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run a command in a running container, like kubectl exec",
		ArgsUsage: "POD -- CMD [ARG...]",
		Flags: []cli.Flag{
			namespaceFlag(podNamespace),
			containerFlag(),
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the command"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "allocate a terminal"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return usageError{"exec: usage: podrun exec POD -- CMD [ARG...]"}
			}
			return withContainer(c, func(h *run.Host, p *run.PodInfo, name string) error {
				cur := p.Current(name)
				if cur == nil || cur.Task.State != engine.TaskRunning {
					return fmt.Errorf("container %q of pod %s/%s is not running", name, p.Namespace, p.Name)
				}
				spec := engine.ExecSpec{Args: c.Args().Slice()[1:], Stdout: os.Stdout, Stderr: os.Stderr, TTY: c.Bool("tty")}
				if c.Bool("stdin") {
					spec.Stdin = os.Stdin
				}
				if spec.TTY {
					restore, err := console.Raw(os.Stdin)
					if err != nil {
						return err
					}
					defer restore()
				}
				code, err := h.Engine().Exec(c.Context, cur.ID, spec)
				switch {
				case errors.Is(err, engine.ErrOutputHeld):
					// The command ran to its end: its code is the result.
					fmt.Fprintf(os.Stderr, "podrun: exec: %v\n", err)
				case err != nil:
					return err
				}
				if code != 0 {
					return cli.Exit("", code)
				}
				return nil
			})
		},
	}
}
