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
			printPolicyLine(os.Stderr, c)
			return withPod(c, func(_ *run.Host, p *run.PodInfo) error {
				for _, pr := range openOwner(c).ProblemsOf(p.Source) {
					fmt.Fprintf(os.Stderr, "podrun daemon: %s is not applied (the pod runs as last applied):\n  %s\n", pr.Source, strings.ReplaceAll(pr.Msg, "\n", "\n  "))
				}
				return printers.Status(os.Stdout, p, c.String("output"))
			})
		},
	}
}
