// Package images makes the images of pods present as the kubelet's image
// manager does: per imagePullPolicy, with the pod's pull Secrets then the
// node's credentials, and with the kubelet's back-off after a failed pull
// (EnsureGated for the daemon's pod workers; EnsureRetrying for `up`, which
// waits it out). Its errors carry the Kubernetes reasons (ErrImagePull, ImagePullBackOff...).
package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/archivereg"
	"github.com/podrun/podrun/backoff"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/pullnet"
	"github.com/podrun/podrun/registry"
	"github.com/podrun/podrun/resources"
)

// Options are the node's registry settings.
type Options struct {
	// RegistryConfig is a Docker config file (~/.docker/config.json) whose
	// "auths" give the node's registry credentials, read at each pull; ""
	// for none. RegistryConfigOptional: a missing file is no error.
	RegistryConfig         string
	RegistryConfigOptional bool
	// Insecure registries (HOST or HOST:PORT) may be reached over plain
	// HTTP or with unverified certificates; loopback registries always may.
	Insecure []string
	// HostsDirs are containerd's registry host directories (hosts.toml).
	HostsDirs []string
	// Progress, when set, is told how pulls are going.
	Progress Progress
	// Link, when set, carries every pull: its progress deadline and its
	// rate cap (--image-pull-progress-deadline, --pull-rate).
	Link *pullnet.Link
	// Verifier, when set, is the node's signature policy: every pulled
	// image is verified before it is used, and runs by its digest.
	Verifier Verifier
	// ScratchDir keeps an archive read from a pipe, or compressed, while
	// its signatures are verified (uncompressed, unlinked at once); "" is
	// the system's temp dir.
	ScratchDir string
}

// Verifier checks an image against the node's signature policy
// (trust.Policy): ref as the pod names it, digest the manifest the pull
// resolved. Any error refuses the image.
type Verifier interface {
	// VerifyPulled reads the image's signatures with fetch, the way the
	// pull went (its hosts, credential and link); or, where the policy
	// reads them from elsewhere too, from the registry over plain HTTP
	// when insecure, with the credential the pull used (cred zero: none).
	VerifyPulled(ctx context.Context, ref, digest string, insecure bool, cred registry.Credential, fetch func(context.Context) (archivereg.Source, error)) error
	// AllowUnverified is nil when the policy lets ref run unverified
	// (its scope accepts anything), else why not.
	AllowUnverified(ctx context.Context, ref, digest string) error
	// VerifyArchive checks ref at digest, imported from archive (an
	// uncompressed tar), with the signatures the archive carries.
	VerifyArchive(ctx context.Context, ref, digest string, archive *io.SectionReader) error
}

// ReasonSignatureValidationFailed is a container's waiting reason when the
// signature policy refuses its image, as CRI-O and the kubelet say it.
const ReasonSignatureValidationFailed = "SignatureValidationFailed"

// Manager makes images present on one runtime.
type Manager struct {
	engine engine.Engine
	o      Options
	now    func() time.Time
	pulls  pullBackoffs // by pod UID and image
}

// New returns a Manager on e; now is the clock of the back-offs.
func New(e engine.Engine, o Options, now func() time.Time) *Manager {
	return &Manager{engine: e, o: o, now: now}
}

// ReasonImagePullBackOff is a container's waiting reason between two pulls
// of an image that failed.
const ReasonImagePullBackOff = "ImagePullBackOff"

// Link is the link pulls go through (nil: none).
func (m *Manager) Link() *pullnet.Link { return m.o.Link }

// Retryable reports whether a failed pull may succeed if tried again
// later: the registry could not be reached, timed out, or answered 429 or
// 5xx. A refusal (401/403), an unknown image or tag, an invalid reference
// or imagePullPolicy Never is not: trying again cannot fix it.
func Retryable(err error) bool {
	if perr := (*PullError)(nil); errors.As(err, &perr) && perr.Reason != ReasonErrImagePull {
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
	backoff backoff.Backoff
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
		if now.Sub(e.updated) > 2*backoff.Max {
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

// NextRetry is when the first image back-off of a pod started with
// UpOptions.PullBackOff ends (zero when none runs): the daemon syncs then.
func (m *Manager) NextRetry() time.Time { return m.pulls.next(m.now()) }

// BackOffError is the failure of an image still in back-off; last is the
// failed pull's Cause. The kubelet's message (image_manager.go) names the
// image as written, with the default tag applied.
func BackOffError(ref, last string) *PullError {
	return &PullError{Reason: ReasonImagePullBackOff, Image: ref,
		Err: fmt.Errorf("Back-off pulling image %q: %s", withDefaultTag(ref), last)} //nolint:staticcheck // the kubelet's message, capitalized
}

// withDefaultTag is the kubelet's applyDefaultImageTag: ref with ":latest"
// when it has neither tag nor digest, not otherwise normalized ("busybox"
// -> "busybox:latest").
func withDefaultTag(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	_, tagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if !tagged && !digested {
		return ref + ":latest"
	}
	return ref
}

// PullError carries the Kubernetes reason for an image failure. Failed
// pulls are retried with the kubelet's back-off (EnsureGated): ImagePullBackOff
// is the reason of a pod whose image waits for its next pull.
type PullError struct {
	Reason string // ErrImageNeverPull, ErrImagePull, ImagePullBackOff, InvalidImageName
	Image  string
	Err    error
}

func (e *PullError) Error() string {
	return fmt.Sprintf("%s: image %q: %v", e.Reason, e.Image, e.Err)
}

func (e *PullError) Unwrap() error { return e.Err }

// Cause is the reason and message of a failed pull as the kubelet keeps
// them for the message of the back-off that follows ("ErrImagePull: failed
// to pull and unpack image ...").
func (e *PullError) Cause() string { return e.Reason + ": " + e.Err.Error() }

// Ensure makes ref present per policy; pulls use pullSecrets, then the
// node's credentials.
func (m *Manager) Ensure(ctx context.Context, ref string, policy corev1.PullPolicy, pullSecrets []*corev1.Secret) (engine.Image, error) {
	local, lerr := m.engine.Image(ctx, ref)
	if errors.Is(lerr, engine.ErrInvalidImageName) {
		return engine.Image{}, pullError(ref, lerr) // InvalidImageName
	}
	if lerr != nil && !errors.Is(lerr, engine.ErrNotFound) {
		return engine.Image{}, lerr
	}
	present := lerr == nil
	switch {
	case policy == corev1.PullNever && !present:
		return engine.Image{}, &PullError{Reason: ReasonErrImageNeverPull, Image: ref,
			Err: errors.New("not present and imagePullPolicy is Never; load it with `podrun image import FILE.tar`")}
	case present && policy != corev1.PullAlways:
		if img, ok := m.usable(ctx, ref, local); ok {
			return img, nil
		}
		if policy == corev1.PullNever {
			return engine.Image{}, &PullError{Reason: ReasonSignatureValidationFailed, Image: ref,
				Err: errors.New("present but never verified by the signature policy, and imagePullPolicy is Never")}
		}
	}
	img, err := m.pull(ctx, ref, pullSecrets) // with credentials
	if perr := (*PullError)(nil); errors.As(err, &perr) {
		return engine.Image{}, perr // refused by the signature policy
	}
	if err != nil {
		perr := pullError(ref, err)
		if present {
			perr.Err = fmt.Errorf("%w (the image is present locally: set imagePullPolicy: IfNotPresent to use it)", err)
		}
		return engine.Image{}, perr
	}
	return img, nil
}

// EnsureGated is Ensure behind the pod's image back-off: the
// kubelet's EnsureImageExists checks the local image first (an image
// imported meanwhile is used), then the back-off, then pulls.
func (m *Manager) EnsureGated(ctx context.Context, uid, ref string, policy corev1.PullPolicy, secrets []*corev1.Secret) (engine.Image, error) {
	key := pullKey(uid, ref)
	if last, ok := m.pulls.waiting(key, m.now()); ok {
		if img, err := m.engine.Image(ctx, ref); err == nil && policy != corev1.PullAlways {
			if img, ok := m.usable(ctx, ref, img); ok {
				m.pulls.forget(key)
				return img, nil
			}
		}
		return engine.Image{}, BackOffError(ref, last)
	}
	img, err := m.Ensure(ctx, ref, policy, secrets)
	perr := (*PullError)(nil)
	switch {
	case err == nil:
		m.pulls.forget(key)
	case errors.As(err, &perr) && (perr.Reason == ReasonErrImagePull || perr.Reason == ReasonSignatureValidationFailed):
		m.pulls.failed(key, m.now(), perr.Cause())
	}
	return img, err
}

// Waiting returns the ImagePullBackOff of a pod whose image is still in
// back-off, or nil: Up then leaves the pod as it is (Pending) instead of
// replacing it only to fail again.
func (m *Manager) Waiting(ctx context.Context, p *manifest.Pod) *PullError {
	for _, c := range resources.Containers(p.Pod) {
		last, ok := m.pulls.waiting(pullKey(p.UID, c.Image), m.now())
		if !ok {
			continue
		}
		if img, err := m.engine.Image(ctx, c.Image); err == nil && c.ImagePullPolicy != corev1.PullAlways {
			if _, ok := m.usable(ctx, c.Image, img); ok {
				return nil // imported meanwhile: start it now
			}
		}
		return BackOffError(c.Image, last)
	}
	return nil
}

// Prefetch makes the images of a pod's containers present, behind
// the pod's image back-off, before anything of the pod is made.
func (m *Manager) Prefetch(ctx context.Context, p *manifest.Pod) error {
	for _, c := range resources.Containers(p.Pod) {
		if _, err := m.EnsureGated(ctx, p.UID, c.Image, c.ImagePullPolicy, p.PullSecrets); err != nil {
			return fmt.Errorf("container %q: %w", c.Name, err)
		}
	}
	return nil
}

// Import imports an image archive (engine.Engine.Import) and ends
// every image pull back-off: the pods that wait on an image it brought are
// tried again at once. Under a signature policy, each image whose scope
// asks for signatures is verified with those the archive carries and named
// by its digest too, as a verified pull leaves it; an archive with an
// image the policy refuses is removed whole: a *PullError
// SignatureValidationFailed.
func (m *Manager) Import(ctx context.Context, r io.Reader) ([]engine.Image, error) {
	if m.o.Verifier == nil {
		return m.imported(m.engine.Import(ctx, r))
	}
	a, err := newArchive(r, m.o.ScratchDir)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	imgs, err := m.engine.Import(ctx, a.input())
	if err != nil {
		return nil, err
	}
	return m.imported(m.verifyArchive(ctx, imgs, a))
}

// imported ends the back-offs after an import that succeeded.
func (m *Manager) imported(imgs []engine.Image, err error) ([]engine.Image, error) {
	if err != nil {
		return nil, err
	}
	m.pulls.clear()
	return imgs, nil
}

// verifyArchive checks the images of archive a against the signature
// policy, names those it verified by digest, and removes them all when one
// is refused.
func (m *Manager) verifyArchive(ctx context.Context, imgs []engine.Image, a *archive) ([]engine.Image, error) {
	var pin []engine.Image
	for _, img := range imgs {
		if m.o.Verifier.AllowUnverified(ctx, img.Ref, img.Digest) == nil {
			continue
		}
		tar, err := a.tar()
		if err == nil {
			err = m.o.Verifier.VerifyArchive(ctx, img.Ref, img.Digest, tar)
		}
		if err != nil {
			return nil, m.refuseArchive(ctx, imgs, img, err)
		}
		pin = append(pin, img)
	}
	for _, img := range pin {
		pinned, err := byDigest(img)
		if err == nil {
			_, err = m.engine.Tag(ctx, img.Ref, pinned)
		}
		if err != nil {
			return nil, m.refuseArchive(ctx, imgs, img, fmt.Errorf("naming the verified image by its digest: %w", err))
		}
	}
	return imgs, nil
}

// refuseArchive removes the images imgs of an archive, img refused for err.
func (m *Manager) refuseArchive(ctx context.Context, imgs []engine.Image, img engine.Image, err error) error {
	for _, i := range imgs {
		if rerr := m.engine.RemoveImage(ctx, i.Ref); rerr != nil && !errors.Is(rerr, engine.ErrNotFound) {
			err = fmt.Errorf("%w (and removing the refused image %s: %w)", err, i.Ref, rerr)
		}
	}
	return &PullError{Reason: ReasonSignatureValidationFailed, Image: img.Ref, Err: err}
}

func (p *pullBackoffs) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.entries)
}

// Progress shows how pulls are going (main draws a status line on a
// terminal). Calls come from the pulling goroutines, concurrently.
type Progress interface {
	// Update says how far the pull of ref is.
	Update(ref string, p engine.PullProgress)
	// Done says the pull of ref has ended, well or not.
	Done(ref string)
}

// Kubernetes reasons of image failures (a container's waiting reason).
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonInvalidImageName  = "InvalidImageName"
)

// keyring gathers the credentials for pulls: the pod's image pull Secrets
// first, then the node's Docker config file, as the kubelet does.
func (m *Manager) keyring(secrets []*corev1.Secret) (*registry.Keyring, error) {
	var kr registry.Keyring
	for _, s := range secrets {
		cfg, err := registry.FromSecret(s)
		if err != nil {
			return nil, fmt.Errorf("image pull secret %q: %w", s.Name, err)
		}
		kr.Add(fmt.Sprintf("secret %q", s.Namespace+"/"+s.Name), cfg)
	}
	if path := m.o.RegistryConfig; path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && m.o.RegistryConfigOptional:
		case err != nil:
			return nil, fmt.Errorf("reading the registry config: %w", err)
		default:
			cfg, err := registry.ParseConfigJSON(data)
			if err != nil {
				return nil, fmt.Errorf("registry config %s: %w", path, err)
			}
			kr.Add(path, cfg)
		}
	}
	return &kr, nil
}

// Pull pulls an image with the node's credentials, for `podrun image
// pull`. Errors are *PullError.
func (m *Manager) Pull(ctx context.Context, ref string) (engine.Image, error) {
	img, err := m.pull(ctx, ref, nil)
	if perr := (*PullError)(nil); errors.As(err, &perr) {
		return engine.Image{}, perr
	}
	if err != nil {
		return engine.Image{}, pullError(ref, err)
	}
	return img, nil
}

// pullError gives a failed pull its Kubernetes reason.
func pullError(ref string, err error) *PullError {
	if errors.Is(err, engine.ErrInvalidImageName) {
		return &PullError{Reason: ReasonInvalidImageName, Image: ref, Err: err}
	}
	return &PullError{Reason: ReasonErrImagePull, Image: ref, Err: err}
}

// pull pulls ref with each credential that applies (from pullSecrets, then
// the node's Docker config), in order, until one is accepted — as the
// kubelet tries them — or anonymously when none applies. A refusal says
// what podrun tried and how to give it credentials.
func (m *Manager) pull(ctx context.Context, ref string, pullSecrets []*corev1.Secret) (engine.Image, error) {
	domain, err := registry.Domain(ref)
	if err != nil {
		return engine.Image{}, fmt.Errorf("%w: %w", engine.ErrInvalidImageName, err)
	}
	kr, err := m.keyring(pullSecrets)
	if err != nil {
		return engine.Image{}, err
	}
	o := engine.PullOptions{Insecure: m.o.Insecure, HostsDirs: m.o.HostsDirs, Link: m.o.Link}
	if p := m.o.Progress; p != nil {
		o.Progress = func(pp engine.PullProgress) { p.Update(ref, pp) }
		defer p.Done(ref)
	}
	creds := kr.Lookup(ref)
	if len(creds) == 0 {
		img, err := m.engine.Pull(ctx, ref, o)
		if err != nil {
			return engine.Image{}, pullFailed(ref, explainPull(err, domain, nil, m.o.RegistryConfig))
		}
		return m.verified(ctx, ref, domain, img, registry.Credential{}, o)
	}
	// Credentials go to the image's registry only, never to another host
	// that asks (a redirect to blob storage).
	apiHost := registry.APIHost(domain)
	var last error
	for i, c := range creds {
		o.Auth = func(host string) (string, string) {
			if host != apiHost && host != domain {
				return "", ""
			}
			return c.Username, c.Password
		}
		img, err := m.engine.Pull(ctx, ref, o)
		if err == nil {
			return m.verified(ctx, ref, domain, img, c, o)
		}
		last = explainPull(err, domain, creds[:i+1], m.o.RegistryConfig)
		if !errors.Is(err, engine.ErrUnauthorized) {
			break // another credential would not help
		}
	}
	return engine.Image{}, pullFailed(ref, last)
}

// verified checks the pulled img of ref against the signature policy, if
// any, and returns it by digest (repository@sha256:...): the pod runs what
// was verified, whatever the tag points at later. A refused image loses the
// name the pull gave it, so that no later use finds it present.
func (m *Manager) verified(ctx context.Context, ref, domain string, img engine.Image, cred registry.Credential, o engine.PullOptions) (engine.Image, error) {
	if m.o.Verifier == nil || m.o.Verifier.AllowUnverified(ctx, ref, img.Digest) == nil {
		return img, nil // as without a policy: nothing to verify, nothing to pin
	}
	insecure := registry.IsLocalhost(domain) || registry.IsInsecure(m.o.Insecure, domain)
	fetch := func(ctx context.Context) (archivereg.Source, error) {
		a, err := m.engine.FetchAttachment(ctx, ref, img.Digest, o)
		if err != nil {
			return nil, err
		}
		return attachmentSource(a), nil
	}
	if err := m.o.Verifier.VerifyPulled(ctx, ref, img.Digest, insecure, cred, fetch); err != nil {
		if rerr := m.engine.RemoveImage(ctx, img.Ref); rerr != nil && !errors.Is(rerr, engine.ErrNotFound) {
			err = fmt.Errorf("%w (and removing the refused image: %w)", err, rerr)
		}
		return engine.Image{}, &PullError{Reason: ReasonSignatureValidationFailed, Image: ref, Err: err}
	}
	pinned, err := byDigest(img)
	if err != nil {
		return engine.Image{}, err
	}
	o.Progress = nil
	return m.engine.Pull(ctx, pinned, o) // from the store: the content is there
}

// attachmentSource serves what FetchAttachment read: its blobs, and the
// attachment manifest under its tag.
func attachmentSource(a engine.Attachment) *archivereg.Blobs {
	blobs := make(map[digest.Digest]archivereg.Blob, len(a.Blobs))
	for d, b := range a.Blobs {
		blobs[digest.Digest(d)] = archivereg.Blob{MediaType: b.MediaType, Data: b.Data}
	}
	tags := map[string]digest.Digest{}
	if a.Manifest != "" {
		tags[a.Tag] = digest.Digest(a.Manifest)
	}
	return archivereg.NewBlobs(blobs, tags)
}

// usable is the present image local of ref as a pod may use it under the
// signature policy: as it is when there is none or ref's scope accepts
// anything; else by digest, present only when a pull verified it (a tag
// imported, or pulled before the policy, is not).
func (m *Manager) usable(ctx context.Context, ref string, local engine.Image) (engine.Image, bool) {
	if m.o.Verifier == nil || m.o.Verifier.AllowUnverified(ctx, ref, local.Digest) == nil {
		return local, true
	}
	pinned, err := byDigest(local)
	if err != nil {
		return engine.Image{}, false
	}
	img, err := m.engine.Image(ctx, pinned)
	return img, err == nil
}

// byDigest is img's reference by its digest.
func byDigest(img engine.Image) (string, error) {
	named, err := reference.ParseNormalizedNamed(img.Ref)
	if err != nil {
		return "", fmt.Errorf("%w: %w", engine.ErrInvalidImageName, err)
	}
	return reference.TrimNamed(named).String() + "@" + img.Digest, nil
}

// pullFailed words a failed pull as containerd's CRI plugin does
// (image_pull.go), whose message the kubelet shows with ErrImagePull: the
// image fully named, then the cause.
func pullFailed(ref string, err error) error {
	if named, perr := reference.ParseDockerRef(ref); perr == nil {
		ref = named.String()
	}
	return fmt.Errorf("failed to pull and unpack image %q: %w", ref, err)
}

// explainPull adds what podrun tried, and the way out, to a pull error.
func explainPull(err error, domain string, tried []registry.Credential, configPath string) error {
	switch {
	case errors.Is(err, engine.ErrUnauthorized) && len(tried) == 0:
		where := "an entry in the Docker config file (--registry-config)"
		if configPath != "" {
			where = fmt.Sprintf("an entry in %s (--registry-config)", configPath)
		}
		return fmt.Errorf("%w (podrun has no credentials for %s: add an imagePullSecret of type kubernetes.io/dockerconfigjson to the pod, or %s)", err, domain, where)
	case errors.Is(err, engine.ErrUnauthorized):
		var from []string
		for _, c := range tried {
			from = append(from, fmt.Sprintf("user %q from %s", c.Username, c.Source))
		}
		return fmt.Errorf("%w (the registry refused the credentials of %s)", err, strings.Join(from, ", "))
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%w (a plain-HTTP registry: list it with --insecure-registry %s if that is intended)", err, domain)
	}
	return err
}
