// podrun ps: kubectl get pods.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/status"
)

func psCommand() *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "list pods, like kubectl get pods",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "include pods that have completed (Succeeded or Failed)"},
			namespaceFlag(),
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "every namespace (the default without -n)"},
			outputFlag("wide", "json", "yaml", "name"),
		},
		Action: func(c *cli.Context) error {
			h, err := openHost(c.Context, c)
			if err != nil {
				return err
			}
			defer h.Close()
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
			return printPods(os.Stdout, shown, c.String("output"))
		},
	}
}

func finished(p *run.PodInfo) bool {
	return p.Pod != nil && (p.Pod.Status.Phase == corev1.PodSucceeded || p.Pod.Status.Phase == corev1.PodFailed)
}

func printPods(w io.Writer, pods []*run.PodInfo, format string) error {
	switch format {
	case "json", "yaml":
		list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}}
		for _, p := range pods {
			if p.Pod != nil {
				pod := p.Pod.DeepCopy()
				pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
				list.Items = append(list.Items, *pod)
			}
		}
		return printObject(w, list, format)
	case "name":
		for _, p := range pods {
			fmt.Fprintf(w, "pod/%s\n", p.Name)
		}
		return nil
	case "", "wide":
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		header := "NAMESPACE\tNAME\tREADY\tSTATUS\tRESTARTS\tAGE\tIP\tSOURCE"
		if format == "wide" {
			header += "\tUID"
		}
		fmt.Fprintln(tw, header)
		for _, p := range pods {
			fmt.Fprintln(tw, podRow(p, format == "wide"))
		}
		return tw.Flush()
	}
	return usageError{fmt.Sprintf("unknown output format %q", format)}
}

func printObject(w io.Writer, obj any, format string) error {
	data, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

func podRow(p *run.PodInfo, wide bool) string {
	ready, reason, restarts, age, ip := "-", "Unknown", int32(0), "-", ""
	if p.Pod != nil {
		st := p.Pod.Status
		n := 0
		for _, cs := range st.ContainerStatuses {
			if cs.Ready {
				n++
			}
			restarts += cs.RestartCount
		}
		for _, cs := range st.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		ready = fmt.Sprintf("%d/%d", n, len(p.Pod.Spec.Containers))
		reason = status.Reason(p.Pod, st)
		if st.StartTime != nil {
			age = duration.HumanDuration(time.Since(st.StartTime.Time))
		}
		ip = st.PodIP
	}
	if ip == "" {
		ip = "<none>"
	}
	name := p.Name
	if name == "" {
		name = p.UID
	}
	row := fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", p.Namespace, name, ready, reason, restarts, age, ip, p.Source)
	if wide {
		row += "\t" + p.UID
	}
	return row
}
