// The commands podrun runs itself, hidden from users: the sandbox's PID 1
// (pause) and the node's stream keeper (cri-io: every container's log,
// stdin and attach).

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/keeper"
	"github.com/podrun/podrun/pause"
)

func pauseCommand() *cli.Command {
	return &cli.Command{Name: "pause", Hidden: true, Action: func(*cli.Context) error { os.Exit(pause.Run()); return nil }}
}

func criIOCommand() *cli.Command {
	return &cli.Command{Name: "cri-io", Hidden: true, Flags: []cli.Flag{&cli.StringFlag{Name: "dir"}},
		Action: func(c *cli.Context) error {
			if c.String("dir") == "" {
				return usageError{"cri-io: --dir is required"}
			}
			closeStdin := func(cfg keeper.Config) error {
				return ctrd.CloseStdin(context.Background(), cfg.Address, cfg.Namespace, cfg.ID)
			}
			if err := keeper.Serve(c.String("dir"), closeStdin); err != nil {
				fmt.Fprintf(os.Stderr, "podrun keeper: %v\n", err)
				return cli.Exit("", 1)
			}
			return nil
		}}
}
