package run

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// ErrKeptFailed marks the failure of a pod recorded Failed (keepFailed):
// it is not tried again until its manifest changes.
var ErrKeptFailed = errors.New("kept Failed until its manifest changes")

// keepFailed records a pod whose init container failed under
// restartPolicy Never (its steps undone) with the status it had then:
// listed Failed, its init containers Completed and Error, and kept so,
// nothing started again, until its manifest changes, as the kubelet keeps
// a static pod that failed.
func (h *Host) keepFailed(p *manifest.Pod, source string, final *corev1.PodStatus) error {
	return h.makeState(&State{UID: p.UID, Hash: p.Hash, Source: source, Pod: p.Pod, Complete: true, Refused: true, Final: final})
}
