package run

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/status"
)

// image makes ref present for the pod. With pullBackOff, a failed pull
// puts the image in back-off for this pod and, while it lasts, the pod
// fails at once with ImagePullBackOff: the caller's next syncs retry it, as
// the kubelet's pod workers do. Otherwise a pull that failed for a reason
// that may pass is retried here with the same back-off until ctx ends
// (images.EnsureRetrying), and any other failure is returned at once.
func (r *podRun) image(ctx context.Context, ref string, policy corev1.PullPolicy, secrets []*corev1.Secret) (engine.Image, error) {
	if r.pullBackOff {
		return r.h.images.EnsureGated(ctx, r.pod.UID, ref, policy, secrets)
	}
	img, err := r.h.images.EnsureRetrying(ctx, ref, policy, secrets, images.Retrying{After: r.h.clock.After,
		BackingOff: func(perr *images.PullError, delay time.Duration) error { return r.backingOff(ref, perr, delay) }})
	if err == nil && r.state.ImagePull != nil {
		r.state.ImagePull = nil
		err = r.h.saveState(r.state)
	}
	return img, err
}

// backingOff records that the pull of ref failed with perr and is retried
// after delay: `podrun ps` meanwhile shows the pod Pending, ImagePullBackOff.
func (r *podRun) backingOff(ref string, perr *images.PullError, delay time.Duration) error {
	r.state.ImagePull = &status.ImageWait{Image: ref, Reason: images.ReasonImagePullBackOff, Message: images.BackOffError(ref, perr.Cause()).Err.Error()}
	if err := r.h.saveState(r.state); err != nil {
		return err
	}
	r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("%s: back-off %s pulling image %q: %v", images.ReasonImagePullBackOff, delay, ref, perr.Err)})
	return nil
}

// keepPending records an image failure of a pod that Up could not start
// (its steps undone) as the pod's state, so that `podrun ps` and `status`
// show it Pending with the failure as its containers' waiting reason, as
// the kubelet shows a pod whose image it cannot pull.
func (h *Host) keepPending(p *manifest.Pod, source string, perr *images.PullError) error {
	return h.makeState(&State{UID: p.UID, Hash: p.Hash, Source: source, Pod: p.Pod,
		ImagePull: &status.ImageWait{Image: perr.Image, Reason: perr.Reason, Message: perr.Err.Error()}})
}
