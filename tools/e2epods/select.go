package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/manifest"
)

// Pod is one Pod document to write out, under a name unique in the set.
type Pod struct {
	Name  string
	Where string
	YAML  string
}

// Skip is a Pod document left out, and why.
type Skip struct {
	Name, Where, Reason string
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Select splits the found strings into documents and keeps the Pods both a
// standalone kubelet and podrun can be asked to run: podrun accepts them (a
// manifest the suite writes to see it refused says nothing about status),
// they name only images in images, and they need nothing from the host or
// an API server. A name used by different pods is made unique with a
// suffix; the same pod found twice is kept once.
func Select(found []Found, images []string) ([]Pod, []Skip) {
	have := map[string]bool{}
	for _, ref := range images {
		have[normal(ref)] = true
	}
	var kept []Pod
	var skipped []Skip
	byName := map[string]string{} // name -> YAML kept
	for _, f := range found {
		for _, doc := range docSep.Split(f.Text, -1) {
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if yaml.Unmarshal([]byte(doc), &head) != nil || head.Kind != "Pod" {
				continue
			}
			name := head.Metadata.Name
			if strings.Contains(doc, "image: IMAGE") {
				continue // a template: its uses, with the image filled in, are found too
			}
			if reason := skipReason(f.Where, doc, have); reason != "" {
				skipped = append(skipped, Skip{Name: name, Where: f.Where, Reason: reason})
				continue
			}
			doc = strings.TrimLeft(doc, "\n")
			unique := name
			for i := 2; ; i++ {
				prev, taken := byName[unique]
				if !taken {
					break
				}
				if prev == doc {
					unique = ""
					break
				}
				unique = fmt.Sprintf("%s-%d", name, i)
			}
			if unique == "" {
				continue
			}
			if unique != name {
				renamed, err := rename(doc, unique)
				if err != nil {
					skipped = append(skipped, Skip{Name: name, Where: f.Where, Reason: err.Error()})
					continue
				}
				byName[unique] = doc
				doc = renamed
			} else {
				byName[unique] = doc
			}
			kept = append(kept, Pod{Name: unique, Where: f.Where, YAML: doc})
		}
	}
	return kept, skipped
}

// skipReason says why a Pod document is not one to judge by, "" when it is.
func skipReason(where, doc string, images map[string]bool) string {
	set, err := manifest.Options{}.ParseUnresolved(where, []byte(doc))
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return "podrun refuses it (the test checks the refusal): " + first
	}
	if len(set.Pods) != 1 {
		return "not one pod"
	}
	pod := set.Pods[0].Pod
	return needs(pod, images)
}

// needs names what a pod needs that the oracle cannot give both sides.
func needs(pod *corev1.Pod, images map[string]bool) string {
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.HostPath != nil:
			return "hostPath volume: host state, shared by both sides"
		case v.ConfigMap != nil, v.Secret != nil, v.Projected != nil:
			return "ConfigMap/Secret/projected volume: the kubelet refuses API references in a static pod"
		case v.PersistentVolumeClaim != nil:
			return "persistentVolumeClaim: podrun's own named volumes, the kubelet needs a PVC object"
		case v.Image != nil:
			return "image volume: a second image, and a feature gate off in kubelet 1.34"
		}
	}
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return "imagePullSecrets: a registry, and a Secret the kubelet refuses in a static pod"
	}
	var all []corev1.Container
	all = append(all, pod.Spec.InitContainers...)
	all = append(all, pod.Spec.Containers...)
	for _, c := range all {
		if !images[normal(c.Image)] {
			return fmt.Sprintf("image %s: from a registry or built for its test alone", c.Image)
		}
		if len(c.EnvFrom) > 0 {
			return "envFrom: the kubelet refuses API references in a static pod"
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && (e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil) {
				return "env from a ConfigMap/Secret: the kubelet refuses API references in a static pod"
			}
		}
	}
	return ""
}

// normal is an image reference as containerd names it: busybox ->
// docker.io/library/busybox:latest; an unparsable one stays as written.
func normal(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.TagNameOnly(named).String()
}

// rename sets a Pod document's metadata.name.
func rename(doc, name string) (string, error) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return "", fmt.Errorf("renaming to %s: %w", name, err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return "", fmt.Errorf("renaming to %s: no metadata", name)
	}
	meta["name"] = name
	out, err := yaml.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("renaming to %s: %w", name, err)
	}
	return string(out), nil
}
