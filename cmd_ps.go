// podrun ps: kubectl get pods.

package main

import (
	"os"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/run"
)

func psCommand() *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "list pods, like kubectl get pods",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "include pods that have completed (Succeeded or Failed)"},
			namespaceFlag("list only the pods of this namespace (default: every namespace)"),
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "every namespace (the default without -n)"},
			outputFlag("wide", "json", "yaml", "name"),
		},
		Action: func(c *cli.Context) error {
			return withHost(c.Context, c, func(h *run.Host) error {
				pods, err := h.Pods(c.Context)
				if err != nil {
					return err
				}
				ns := c.String("namespace")
				if c.Bool("all-namespaces") {
					ns = ""
				}
				var shown []*run.PodInfo
				for _, p := range pods {
					if (c.Bool("all") || !finished(p)) && (ns == "" || p.Namespace == ns) {
						shown = append(shown, p)
					}
				}
				daemonNotes(c)
				return printers.Pods(os.Stdout, shown, c.String("output"))
			})
		},
	}
}

func finished(p *run.PodInfo) bool {
	return p.Pod != nil && (p.Pod.Status.Phase == corev1.PodSucceeded || p.Pod.Status.Phase == corev1.PodFailed)
}
