package manifest

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
)

// The annotations the kubelet puts on a static pod (pkg/kubelet/types).
const (
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	ConfigHashAnnotation   = "kubernetes.io/config.hash"
	ConfigSeenAnnotation   = "kubernetes.io/config.seen"
)

// makeStatic turns a pod read from source into a static pod of node, as the
// kubelet's file and http sources do (pkg/kubelet/config/common.go,
// applyDefaults): its UID is a hash of its content, the node and the
// source (a file's absolute path, or the URL), in hex; its name is
// <name>-<node>; spec.nodeName is the node; it is annotated with its config
// source ("file" or "http"), hash (the UID, which changes with every edit)
// and the time it was first seen. Hash takes the node and source in too: a
// file renamed is another static pod, as for the kubelet.
func (r *reader) makeStatic(p *Pod, src Source, prefix string) {
	node := r.opts.StaticNode
	kind, origin := "file", src.Origin()
	if strings.Contains(origin, "://") {
		kind = "http"
	}
	key := p.Hash + "host:" + node + kind + ":" + origin
	if kind == "http" {
		key = p.Hash + "url:" + origin
	}
	sum := md5.Sum([]byte(key))
	uid := hex.EncodeToString(sum[:])
	full := sha256.Sum256([]byte(key))
	p.Hash, p.UID = hex.EncodeToString(full[:]), uid
	pod := p.Pod
	name := pod.Name + "-" + node
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		r.problem(src, prefix+"metadata.name", fmt.Sprintf("Invalid value: %q: as a static pod of node %q, named %q: %s", pod.Name, node, name, msg))
	}
	pod.UID = types.UID(uid)
	pod.Name = name
	pod.Spec.NodeName = node
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ConfigSourceAnnotation] = kind
	pod.Annotations[ConfigHashAnnotation] = uid
	pod.Annotations[ConfigSeenAnnotation] = r.opts.now().UTC().Format(time.RFC3339Nano)
	// Static pods tolerate every NoExecute taint (the kubelet adds this so
	// that node problems never evict them).
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
}

// StaticName is the name a static pod of node has in its file, and
// whether name is a static pod's name on that node.
func StaticName(pod *corev1.Pod) (string, bool) {
	switch pod.Annotations[ConfigSourceAnnotation] {
	case "file", "http":
	default:
		return "", false
	}
	return strings.CutSuffix(pod.Name, "-"+pod.Spec.NodeName)
}

// now is the time on the options' clock.
func (o Options) now() time.Time {
	if o.Clock == nil {
		return clock.RealClock{}.Now()
	}
	return o.Clock.Now()
}
