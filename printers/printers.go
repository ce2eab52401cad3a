// Package printers prints pods, images and objects the way kubectl does:
// tables for people, v1 objects as JSON or YAML for programs.
package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/rollout"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/status"
)

// FormatError is an -o value a printer does not know.
type FormatError struct{ Format string }

func (e *FormatError) Error() string { return fmt.Sprintf("unknown output format %q", e.Format) }

// Pods prints pods as kubectl get pods does: a table (wide adds the UID
// and the workload a pod was made from, OWNER),
// a v1 List (json, yaml) or pod/NAME lines (name).
func Pods(w io.Writer, pods []*run.PodInfo, format string) error {
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
		return Object(w, list, format)
	case "name":
		for _, p := range pods {
			fmt.Fprintf(w, "pod/%s\n", p.Name)
		}
		return nil
	case "", "wide":
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		header := "NAMESPACE\tNAME\tREADY\tSTATUS\tRESTARTS\tAGE\tIP\tSOURCE"
		if format == "wide" {
			header += "\tUID\tOWNER"
		}
		fmt.Fprintln(tw, header)
		for _, p := range pods {
			fmt.Fprintln(tw, podRow(p, format == "wide"))
		}
		return tw.Flush()
	}
	return &FormatError{Format: format}
}

// Object prints obj as indented JSON, or YAML.
func Object(w io.Writer, obj any, format string) error {
	if format != "json" && format != "yaml" {
		return &FormatError{Format: format}
	}
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

// Objects prints objects (each with its apiVersion and kind) as kubectl
// apply --dry-run=client -o does: one alone, several as a v1 List.
func Objects(w io.Writer, objects []runtime.Object, format string) error {
	if len(objects) == 1 {
		return Object(w, objects[0], format)
	}
	list := corev1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}, Items: []runtime.RawExtension{}}
	for _, o := range objects {
		list.Items = append(list.Items, runtime.RawExtension{Object: o})
	}
	return Object(w, list, format)
}

// podRow is a pod's line of the table.
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
		if reason == string(corev1.PodRunning) && rollout.RolledBack(p.Pod) != nil {
			reason = "RolledBack" // runs the version before its file's, which failed
		}
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
		owner := "<none>"
		if p.Pod != nil {
			if w := manifest.Workload(p.Pod); w != "" {
				owner = w
			}
		}
		row += "\t" + p.UID + "\t" + owner
	}
	return row
}

// Status prints a pod for `podrun status`: the v1 Pod, preceded by
// default (no -o) by a comment naming its SOURCE as ps shows it, which
// Kubernetes has no field for; a comment keeps the output valid YAML.
func Status(w io.Writer, p *run.PodInfo, format string) error {
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
		return &FormatError{Format: format}
	}
	pod := p.Pod.DeepCopy()
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	return Object(w, pod, format)
}

// Images prints images as a table (REF, DIGEST, SIZE), or as json/yaml.
func Images(w io.Writer, imgs []engine.Image, format string) error {
	if format != "" {
		return Object(w, imgs, format)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "REF\tDIGEST\tSIZE")
	for _, i := range imgs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", i.Ref, i.Digest, HumanSize(i.Size))
	}
	return tw.Flush()
}

// HumanSize is a byte count in binary units ("3.1 MiB"); "-" when unknown.
func HumanSize(n int64) string {
	if n < 0 {
		return "-"
	}
	units := []string{"B", "KiB", "MiB", "GiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
