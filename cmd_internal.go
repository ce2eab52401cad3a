// The commands podrun runs itself, hidden from users: the sandbox's PID 1
// (pause) and the node's stream keeper (cri-io: every container's log,
// stdin and attach).

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/cgroup"
	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/keeper"
	"github.com/podrun/podrun/pause"
)

func pauseCommand() *cli.Command {
	return &cli.Command{Name: "pause", Hidden: true, Action: func(*cli.Context) error { os.Exit(pause.Run()); return nil }}
}

// keeperWeights are the stream keeper's CPU and I/O weights in its own
// cgroup: a quarter of a default sibling's (cpu.shares 1024, cpu.weight
// 100; an I/O weight of 100). The keeper's work is the containers'
// output: one container writing flat out makes the keeper compete with the
// other pods at this weight, not at the weight of whatever started it, and
// past it the keeper falls behind and the container's writes wait
// (docs/benchmarks.md).
var keeperWeights = cgroup.Weights{CPUShares: 256, IOWeight: 50}

func criIOCommand() *cli.Command {
	return &cli.Command{Name: "cri-io", Hidden: true, Flags: []cli.Flag{&cli.StringFlag{Name: "dir"}, &cli.StringFlag{Name: "cgroup"}},
		Action: func(c *cli.Context) error {
			if c.String("dir") == "" {
				return usageError{"cri-io: --dir is required"}
			}
			closeStdin := func(cfg keeper.Config) error {
				return ctrd.CloseStdin(context.Background(), cfg.Address, cfg.Namespace, cfg.ID)
			}
			if cg := c.String("cgroup"); cg != "" {
				// A keeper that cannot move serves all the same, where it is.
				if io, err := (cgroup.Manager{}).Join(cg, os.Getpid(), keeperWeights); err != nil {
					fmt.Fprintf(os.Stderr, "podrun keeper: %v\n", err)
				} else {
					if !io {
						fmt.Fprintf(os.Stderr, "podrun keeper: cgroup %s: no I/O weight on this kernel (neither the BFQ scheduler nor iocost): the CPU weight only\n", cg)
					}
					defer func() {
						if err := (cgroup.Manager{}).Leave(cg); err != nil {
							fmt.Fprintf(os.Stderr, "podrun keeper: %v\n", err)
						}
					}()
				}
			}
			if err := keeper.Serve(c.String("dir"), closeStdin); err != nil {
				fmt.Fprintf(os.Stderr, "podrun keeper: %v\n", err)
				return cli.Exit("", 1)
			}
			return nil
		}}
}
