// Package kubepods runs the pods the API server binds to this node, as the
// kubelet's apiserver pod source and status manager do: it watches the
// pods with spec.nodeName = the node (never all pods), turns each into a
// manifest.Pod through the same decoding, defaulting, validation and
// admission as a manifest file's, watches by name only the ConfigMaps and
// Secrets those pods name, and writes back their status (a strategic merge
// patch of pods/status with the pod's UID as precondition) and, once a
// deleted pod's containers are gone, deletes its object.
package kubepods

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/manifest"
)

// MirrorAnnotation marks a mirror pod, the API's copy of a static pod: the
// node runs the static pod, never its mirror (the kubelet's
// kubetypes.ConfigMirrorAnnotationKey).
const MirrorAnnotation = "kubernetes.io/config.mirror"

// SourceName is the source label of the pods the API server bound to the
// node (the other sources are files and a URL).
const SourceName = "kubernetes://apiserver"

// UnsupportedReason is why a pod the node cannot run as it is written is
// rejected (Failed, as the kubelet rejects a pod at admission): a field
// podrun does not support, a value it does not accept, or the node's
// admission policy (--policy, --allowed-host-paths, unsafe sysctls).
const UnsupportedReason = "UnsupportedPodSpec"

// Convert turns pod, bound to this node by the API server, into the pod
// the node runs: read as a manifest file's pod is (decoded strictly,
// defaulted, validated, admitted by o), its ConfigMaps and Secrets
// resolved among objects, and its identity the API's metadata.uid, so
// that what runs on the node is matched with the API's pod by UID. A pod
// that does not read is refused (*admission.Refusal, UnsupportedReason).
//
// Before it is read, what only the API server sets and the node does not
// use is dropped: ownerReferences, generateName, finalizers, the deletion
// stamps (a pod being deleted is not run), the status. The projected
// serviceAccountToken sources, which a manifest file cannot have, are read
// aside and put back (withTokenSources): the pod's Hash is of the rest, the
// node writes their tokens (Tokens) into its volumes.
func Convert(o manifest.Options, pod *corev1.Pod, objects *manifest.Set) (*manifest.Pod, error) {
	c := pod.DeepCopy()
	c.APIVersion, c.Kind = "v1", "Pod"
	c.OwnerReferences, c.GenerateName, c.Finalizers = nil, "", nil
	c.DeletionTimestamp, c.DeletionGracePeriodSeconds = nil, nil
	c.Status = corev1.PodStatus{}
	for i := range c.Spec.Volumes {
		if p := c.Spec.Volumes[i].Projected; p != nil {
			p.Sources = slices.DeleteFunc(p.Sources, isTokenSource)
		}
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	o.StaticNode = "" // the API's pod keeps its name
	set, err := o.ParseUnresolved(SourceName, data)
	if err != nil {
		// Refused for good (another try reads the same); a missing
		// ConfigMap or Secret below may come.
		return nil, &admission.Refusal{Reason: UnsupportedReason, Message: problemText(err)}
	}
	if set, err = manifest.Resolve(set, objects); err != nil {
		return nil, err
	}
	if len(set.Pods) != 1 {
		return nil, fmt.Errorf("pod %s/%s: read %d pods", pod.Namespace, pod.Name, len(set.Pods))
	}
	p := set.Pods[0]
	p.UID, p.Pod.UID = string(pod.UID), pod.UID
	withTokenSources(p.Pod, pod)
	return p, nil
}

// withTokenSources puts the projected serviceAccountToken sources of api
// back into read, the pod read from it without them, each at its place
// among its volume's sources.
func withTokenSources(read, api *corev1.Pod) {
	for _, av := range api.Spec.Volumes {
		if av.Projected == nil || !slices.ContainsFunc(av.Projected.Sources, isTokenSource) {
			continue
		}
		i := slices.IndexFunc(read.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == av.Name })
		if i < 0 || read.Spec.Volumes[i].Projected == nil {
			continue
		}
		rest := read.Spec.Volumes[i].Projected.Sources
		sources := make([]corev1.VolumeProjection, 0, len(av.Projected.Sources))
		for _, s := range av.Projected.Sources {
			switch {
			case isTokenSource(s):
				sources = append(sources, *s.DeepCopy())
			case len(rest) > 0:
				sources, rest = append(sources, rest[0]), rest[1:]
			}
		}
		read.Spec.Volumes[i].Projected.Sources = sources
	}
}

func isTokenSource(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil }

// Refs are the ConfigMaps and Secrets a pod names (volumes, projected
// sources, env, envFrom, imagePullSecrets): the only ones the node may
// read (the Node authorizer allows exactly those), sorted, each once.
func Refs(pod *corev1.Pod) (configMaps, secrets []string) {
	cm, sec := map[string]bool{}, map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			cm[v.ConfigMap.Name] = true
		case v.Secret != nil:
			sec[v.Secret.SecretName] = true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					cm[s.ConfigMap.Name] = true
				}
				if s.Secret != nil {
					sec[s.Secret.Name] = true
				}
			}
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					cm[r.Name] = true
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					sec[r.Name] = true
				}
			}
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil {
					cm[e.ConfigMapRef.Name] = true
				}
				if e.SecretRef != nil {
					sec[e.SecretRef.Name] = true
				}
			}
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		sec[s.Name] = true
	}
	return sortedKeys(cm), sortedKeys(sec)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// isMirror reports whether pod is a mirror pod (MirrorAnnotation).
func isMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[MirrorAnnotation]
	return ok
}

// key is a pod's namespace/name.
func key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// oneLine is an error as one problem line per line of it, prefixed with
// the pod it is about.
func oneLine(pod *corev1.Pod, uid types.UID, err error) string {
	return fmt.Sprintf("pod %s (uid %s) bound to this node: %s", key(pod), uid, problemText(err))
}

// problemText is a manifest error about one API pod in one line, without
// the source and document every problem of it names.
func problemText(err error) string {
	return strings.ReplaceAll(strings.ReplaceAll(err.Error(), SourceName+" (document 1): ", ""), "\n", "; ")
}
