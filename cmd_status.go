// podrun status.

package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/daemon"
	"github.com/podrun/podrun/run"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "print a pod as Kubernetes would (a v1 Pod with its status)",
		ArgsUsage: "POD",
		Flags:     []cli.Flag{namespaceFlag(), outputFlag("yaml", "json")},
		Action: func(c *cli.Context) error {
			h, p, err := onePod(c)
			if err != nil {
				return err
			}
			defer h.Close()
			if st, ok := daemon.ReadStatus(statusFile(c)); ok {
				for _, pr := range st.Problems {
					if pr.Source == p.Source {
						fmt.Fprintf(os.Stderr, "podrun daemon: %s is not applied (the pod runs as last applied):\n  %s\n", pr.Source, strings.ReplaceAll(pr.Msg, "\n", "\n  "))
					}
				}
			}
			return printStatus(os.Stdout, p, c.String("output"))
		},
	}
}

// printStatus prints a pod for `podrun status`: the v1 Pod, preceded by
// default (no -o) by a comment naming its SOURCE as ps shows it, which
// Kubernetes has no field for; a comment keeps the output valid YAML.
func printStatus(w io.Writer, p *run.PodInfo, format string) error {
	switch format {
	case "":
		src := p.Source
		if src == "" {
			src = "<none>"
		}
		if _, err := fmt.Fprintf(w, "# source: %s\n", src); err != nil {
			return err
		}
		format = "yaml"
	case "yaml", "json":
	default:
		return usageError{fmt.Sprintf("unknown output format %q", format)}
	}
	pod := p.Pod.DeepCopy()
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	return printObject(w, pod, format)
}
