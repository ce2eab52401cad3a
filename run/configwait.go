package run

import (
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
)

// keepConfigWaiting records a pod that Up could not start (its steps
// undone) because a container could not be created from its
// configuration, so that `podrun ps` and `status` show it Pending with
// that container waiting in CreateContainerConfigError and the message,
// as the kubelet shows such a pod while it tries it again.
func (h *Host) keepConfigWaiting(p *manifest.Pod, source string, cerr *spec.ConfigError) error {
	return h.makeState(&State{UID: p.UID, Hash: p.Hash, Source: source, Pod: p.Pod,
		ConfigWait: &status.ConfigWait{Container: cerr.Container, Reason: spec.ReasonCreateContainerConfigError, Message: cerr.Msg}})
}
