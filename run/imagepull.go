package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/status"
)

// ReasonImagePullBackOff is a container's waiting reason between two pulls
// of an image that failed.
const ReasonImagePullBackOff = "ImagePullBackOff"

// Retryable reports whether a failed pull may succeed if tried again
// later: the registry could not be reached, timed out, or answered 429 or
// 5xx. A refusal (401/403), an unknown image or tag, an invalid reference
// or imagePullPolicy Never is not: trying again cannot fix it.
func Retryable(err error) bool {
	if perr := (*ImagePullError)(nil); errors.As(err, &perr) && perr.Reason != ReasonErrImagePull {
		return false
	}
	return errors.Is(err, engine.ErrTemporary) && !errors.Is(err, engine.ErrUnauthorized)
}

// pullBackoffs is the kubelet's image back-off (image_manager.go, a
// flowcontrol.Backoff keyed by pod UID and image): after a failed pull the
// image is not pulled again for 10 s, then 20 s, ... up to 300 s; an entry
// not updated for twice the maximum starts over. The zero value is ready.
type pullBackoffs struct {
	mu      sync.Mutex
	entries map[string]*pullEntry
}

type pullEntry struct {
	backoff Backoff
	until   time.Time // no pull before
	updated time.Time
	msg     string // the last failure's message
}

func pullKey(uid, image string) string { return uid + "_" + image }

// failed records a failed pull of key at now and returns its back-off.
func (p *pullBackoffs) failed(key string, now time.Time, msg string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.entries == nil {
		p.entries = map[string]*pullEntry{}
	}
	for k, e := range p.entries { // the kubelet's GC of stale entries
		if now.Sub(e.updated) > 2*backoffMax {
			delete(p.entries, k)
		}
	}
	e := p.entries[key]
	if e == nil {
		e = &pullEntry{}
		p.entries[key] = e
	}
	d := e.backoff.Delay(0)
	e.until, e.updated, e.msg = now.Add(d), now, msg
	return d
}

// waiting returns the last failure's message while key is in back-off at now.
func (p *pullBackoffs) waiting(key string, now time.Time) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || !now.Before(e.until) {
		return "", false
	}
	return e.msg, true
}

func (p *pullBackoffs) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.entries, key)
}

// next is the earliest end of a back-off after now, or zero.
func (p *pullBackoffs) next(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	for _, e := range p.entries {
		if e.until.After(now) && (first.IsZero() || e.until.Before(first)) {
			first = e.until
		}
	}
	return first
}

// NextPullRetry is when the first image back-off of a pod started with
// UpOptions.PullBackOff ends (zero when none runs): the daemon syncs then.
func (h *Host) NextPullRetry() time.Time { return h.pulls.next(h.clock.Now()) }

// backOffError is the failure of an image still in back-off.
func backOffError(ref, last string) *ImagePullError {
	return &ImagePullError{Reason: ReasonImagePullBackOff, Image: ref,
		Err: fmt.Errorf("Back-off pulling image %q: %s", ref, last)} //nolint:staticcheck // the kubelet's message, capitalized
}

// image makes ref present for the pod. With pullBackOff (the daemon), a
// failed pull puts the image in back-off for this pod and, while it lasts,
// the pod fails at once with ImagePullBackOff: the daemon's next syncs
// retry it, as the kubelet's pod workers do. Otherwise (`podrun up`) a pull
// that failed for a reason that may pass is retried here with the same
// back-off until ctx ends, and any other failure is returned at once.
func (r *podRun) image(ctx context.Context, ref string, policy corev1.PullPolicy, secrets []*corev1.Secret) (engine.Image, error) {
	if r.pullBackOff {
		return r.h.ensureImageGated(ctx, r.pod.UID, ref, policy, secrets)
	}
	var b Backoff
	for {
		img, err := r.h.ensureImage(ctx, ref, policy, secrets)
		perr := (*ImagePullError)(nil)
		if err == nil || !errors.As(err, &perr) || !Retryable(err) || ctx.Err() != nil {
			if err == nil && r.state.ImagePull != nil {
				r.state.ImagePull = nil
				err = r.h.saveState(r.state)
			}
			return img, err
		}
		// `podrun ps` meanwhile shows the pod Pending, ImagePullBackOff.
		r.state.ImagePull = &status.ImageWait{Image: ref, Reason: ReasonImagePullBackOff, Message: backOffError(ref, perr.Err.Error()).Err.Error()}
		if err := r.h.saveState(r.state); err != nil {
			return engine.Image{}, err
		}
		delay := b.Delay(0)
		r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("%s: back-off %s pulling image %q: %v", ReasonImagePullBackOff, delay, ref, perr.Err)})
		select {
		case <-r.h.clock.After(delay):
		case <-ctx.Done():
			return engine.Image{}, fmt.Errorf("%w; gave up retrying: %w", err, ctx.Err())
		}
	}
}

// ensureImageGated is ensureImage behind the pod's image back-off: the
// kubelet's EnsureImageExists checks the local image first (an image
// imported meanwhile is used), then the back-off, then pulls.
func (h *Host) ensureImageGated(ctx context.Context, uid, ref string, policy corev1.PullPolicy, secrets []*corev1.Secret) (engine.Image, error) {
	key := pullKey(uid, ref)
	if last, ok := h.pulls.waiting(key, h.clock.Now()); ok {
		if img, err := h.engine.Image(ctx, ref); err == nil && policy != corev1.PullAlways {
			h.pulls.forget(key)
			return img, nil
		}
		return engine.Image{}, backOffError(ref, last)
	}
	img, err := h.ensureImage(ctx, ref, policy, secrets)
	perr := (*ImagePullError)(nil)
	switch {
	case err == nil:
		h.pulls.forget(key)
	case errors.As(err, &perr) && perr.Reason == ReasonErrImagePull:
		h.pulls.failed(key, h.clock.Now(), perr.Err.Error())
	}
	return img, err
}

// pullWaiting returns the ImagePullBackOff of a pod whose image is still in
// back-off, or nil: Up then leaves the pod as it is (Pending) instead of
// replacing it only to fail again.
func (h *Host) pullWaiting(ctx context.Context, p *manifest.Pod) *ImagePullError {
	for _, c := range resources.Containers(p.Pod) {
		last, ok := h.pulls.waiting(pullKey(p.UID, c.Image), h.clock.Now())
		if !ok {
			continue
		}
		if _, err := h.engine.Image(ctx, c.Image); err == nil && c.ImagePullPolicy != corev1.PullAlways {
			return nil // imported meanwhile: start it now
		}
		return backOffError(c.Image, last)
	}
	return nil
}

// prefetchImages makes the images of a pod's containers present, behind
// the pod's image back-off, before anything of the pod is made.
func (h *Host) prefetchImages(ctx context.Context, p *manifest.Pod) error {
	for _, c := range resources.Containers(p.Pod) {
		if _, err := h.ensureImageGated(ctx, p.UID, c.Image, c.ImagePullPolicy, p.PullSecrets); err != nil {
			return fmt.Errorf("container %q: %w", c.Name, err)
		}
	}
	return nil
}

// keepPending records an image failure of a pod that Up could not start
// (its steps undone) as the pod's state, so that `podrun ps` and `status`
// show it Pending with the failure as its containers' waiting reason, as
// the kubelet shows a pod whose image it cannot pull.
func (h *Host) keepPending(p *manifest.Pod, source string, perr *ImagePullError) error {
	l := h.layout(p.UID)
	if err := os.MkdirAll(l.Pod(), 0o750); err != nil {
		return err
	}
	return h.saveState(&State{UID: p.UID, Hash: p.Hash, Source: source, Pod: p.Pod,
		ImagePull: &status.ImageWait{Image: perr.Image, Reason: perr.Reason, Message: perr.Err.Error()}})
}

// ImportImages imports an image archive (engine.Engine.Import) and ends
// every image pull back-off: the pods that wait on an image it brought are
// tried again at once.
func (h *Host) ImportImages(ctx context.Context, r io.Reader) ([]engine.Image, error) {
	imgs, err := h.engine.Import(ctx, r)
	if err == nil {
		h.pulls.clear()
	}
	return imgs, err
}

func (p *pullBackoffs) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.entries)
}
