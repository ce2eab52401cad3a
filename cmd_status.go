// podrun status.

package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/daemon"
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
				own := openOwner(c)
				for _, pr := range own.ProblemsOf(p.Source) {
					fmt.Fprintf(os.Stderr, "podrun daemon: %s is not applied (the pod runs as last applied):\n  %s\n", pr.Source, strings.ReplaceAll(pr.Msg, "\n", "\n  "))
				}
				for _, pl := range pullsOf(own.Pulls(), p.Pod) {
					fmt.Fprintf(os.Stderr, "podrun daemon: pulling %s\n", pl)
				}
				if pe := own.PendingOf(p.Key()); pe != nil {
					fmt.Fprintf(os.Stderr, "podrun daemon: the pod's changed version waits (the pod runs its previous version): %s%s\n", pe.Message, staged(*pe))
				}
				return printers.Status(os.Stdout, p, c.String("output"))
			})
		},
	}
}

// pullsOf are the pulls of pod's images among pulls.
func pullsOf(pulls []daemon.Pull, pod *corev1.Pod) []daemon.Pull {
	if pod == nil {
		return nil
	}
	images := map[string]bool{}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		images[c.Image] = true
	}
	var out []daemon.Pull
	for _, p := range pulls {
		if images[p.Image] {
			out = append(out, p)
		}
	}
	return out
}
