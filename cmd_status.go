// podrun status.

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/run"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "print a pod as Kubernetes would (a v1 Pod with its status)",
		ArgsUsage: "POD",
		Flags:     []cli.Flag{namespaceFlag(podNamespace), outputFlag("yaml", "json")},
		Action: func(c *cli.Context) error {
			return withPod(c, func(_ *run.Host, p *run.PodInfo) error {
				own := openOwner(c)
				for _, pr := range own.ProblemsOf(p.Source) {
					fmt.Fprintf(os.Stderr, "podrun daemon: %s is not applied (the pod runs as last applied):\n  %s\n", pr.Source, strings.ReplaceAll(pr.Msg, "\n", "\n  "))
				}
				if pe := own.PendingOf(p.Key()); pe != nil {
					fmt.Fprintf(os.Stderr, "podrun daemon: the pod's changed version waits (the pod runs its previous version): %s%s\n", pe.Message, staged(*pe))
				}
				return printers.Status(os.Stdout, p, c.String("output"))
			})
		},
	}
}
