package run

import (
	"fmt"
	"strings"

	"github.com/podrun/podrun/labels"
)

// shortUID is the first 12 hex digits of a pod UID, the prefix of its
// containers' ids.
func shortUID(uid string) string {
	s := strings.ReplaceAll(uid, "-", "")
	if len(s) > 12 {
		s = s[:12]
	}
	return s
}

// SandboxID is the pause container's id.
func SandboxID(uid string) string { return shortUID(uid) + "-pause" }

// ContainerID is the id of one attempt (restart) of a container; container
// names are DNS labels, so "<uid12>-<name>-<n>" never clashes with the sandbox.
func ContainerID(uid, name string, restart int) string {
	return fmt.Sprintf("%s-%s-%d", shortUID(uid), name, restart)
}

// podLabels are the labels every container of a pod carries.
func podLabels(uid, namespace, name, hash, source string) map[string]string {
	return map[string]string{
		labels.PodUID:       uid,
		labels.PodNamespace: namespace,
		labels.PodName:      name,
		labels.PodHash:      hash,
		labels.Source:       source,
	}
}
