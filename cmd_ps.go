// podrun ps: kubectl get pods.

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/daemon"
	"github.com/podrun/podrun/owner"
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
				daemonNotes(openOwner(c))
				return printers.Pods(os.Stdout, shown, c.String("output"))
			})
		},
	}
}

// daemonNotes tells, on stderr, which manifests a running daemon could not
// apply (their pods keep running as last applied), the pulls it has
// under way, and which pods' updates it holds back.
func daemonNotes(own *owner.Owner) {
	for _, p := range own.Pulls() {
		fmt.Fprintf(os.Stderr, "podrun daemon: pulling %s\n", p)
	}
	if pending := own.Pending(); len(pending) > 0 {
		fmt.Fprintln(os.Stderr, "podrun daemon: updates held back (the pods run their previous version):")
		for _, p := range pending {
			fmt.Fprintf(os.Stderr, "  %s: %s%s\n", p.Pod, p.Message, staged(p))
		}
	}
	problems := own.Problems()
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "podrun daemon: not applied (pods keep running as last applied):")
		for _, p := range problems {
			for _, line := range strings.Split(p.Msg, "\n") {
				fmt.Fprintf(os.Stderr, "  %s: %s\n", p.Source, line)
			}
		}
	}
}

// staged says whether a held update's images are present.
func staged(p daemon.Pending) string {
	if p.Staged {
		return "; its images are pulled"
	}
	return "; its images are being pulled"
}

func finished(p *run.PodInfo) bool {
	return p.Pod != nil && (p.Pod.Status.Phase == corev1.PodSucceeded || p.Pod.Status.Phase == corev1.PodFailed)
}
