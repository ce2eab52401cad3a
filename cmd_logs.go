// podrun logs.

package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/run"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a container's log, like kubectl logs",
		ArgsUsage: "POD",
		Flags: []cli.Flag{
			namespaceFlag(podNamespace),
			containerFlag(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing, across restarts"},
			&cli.BoolFlag{Name: "previous", Aliases: []string{"p"}, Usage: "the previous (terminated) instance's log"},
			&cli.IntFlag{Name: "tail", Value: -1, Usage: "last N lines (-1: all)"},
			&cli.BoolFlag{Name: "timestamps", Usage: "prefix each line with its time"},
		},
		Action: func(c *cli.Context) error {
			return withContainer(c, func(h *run.Host, p *run.PodInfo, name string) error {
				dir := h.LogDir(p, name)
				restart, err := logs.Latest(dir)
				if err != nil {
					return fmt.Errorf("container %q of pod %s/%s has no log yet: %w", name, p.Namespace, p.Name, err)
				}
				if c.Bool("previous") {
					if restart == 0 {
						return fmt.Errorf("previous terminated container %q of pod %s/%s not found", name, p.Namespace, p.Name)
					}
					restart--
				}
				ctx, stop := signalContext(c)
				defer stop()
				o := logs.Options{Tail: c.Int("tail"), Timestamps: c.Bool("timestamps"), Follow: c.Bool("follow") && !c.Bool("previous")}
				return logs.Copy(ctx, os.Stdout, dir, restart, o)
			})
		},
	}
}
