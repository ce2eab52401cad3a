package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/registry"
)

// PullProgress shows how pulls are going (main draws a status line on a
// terminal). Calls come from the pulling goroutines, concurrently.
type PullProgress interface {
	// Update says how many bytes of ref are fetched out of the total known so far.
	Update(ref string, done, total int64)
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
func (h *Host) keyring(secrets []*corev1.Secret) (*registry.Keyring, error) {
	var kr registry.Keyring
	for _, s := range secrets {
		cfg, err := registry.FromSecret(s)
		if err != nil {
			return nil, fmt.Errorf("image pull secret %q: %w", s.Name, err)
		}
		kr.Add(fmt.Sprintf("secret %q", s.Namespace+"/"+s.Name), cfg)
	}
	if path := h.cfg.RegistryConfig; path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && h.cfg.RegistryConfigOptional:
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

// PullImage pulls an image with the node's credentials, for `podrun image
// pull`. Errors are *ImagePullError.
func (h *Host) PullImage(ctx context.Context, ref string) (engine.Image, error) {
	img, err := h.pull(ctx, ref, nil)
	if err != nil {
		return engine.Image{}, pullError(ref, err)
	}
	return img, nil
}

// pullError gives a failed pull its Kubernetes reason.
func pullError(ref string, err error) *ImagePullError {
	if errors.Is(err, engine.ErrInvalidImageName) {
		return &ImagePullError{Reason: ReasonInvalidImageName, Image: ref, Err: err}
	}
	return &ImagePullError{Reason: ReasonErrImagePull, Image: ref, Err: err}
}

// pull pulls ref with each credential that applies (from pullSecrets, then
// the node's Docker config), in order, until one is accepted — as the
// kubelet tries them — or anonymously when none applies. A refusal says
// what podrun tried and how to give it credentials.
func (h *Host) pull(ctx context.Context, ref string, pullSecrets []*corev1.Secret) (engine.Image, error) {
	domain, err := registry.Domain(ref)
	if err != nil {
		return engine.Image{}, fmt.Errorf("%w: %w", engine.ErrInvalidImageName, err)
	}
	kr, err := h.keyring(pullSecrets)
	if err != nil {
		return engine.Image{}, err
	}
	o := engine.PullOptions{Insecure: h.cfg.InsecureRegistries, HostsDirs: h.cfg.HostsDirs}
	if p := h.cfg.PullProgress; p != nil {
		o.Progress = func(done, total int64) { p.Update(ref, done, total) }
		defer p.Done(ref)
	}
	creds := kr.Lookup(ref)
	if len(creds) == 0 {
		img, err := h.engine.Pull(ctx, ref, o)
		if err != nil {
			return engine.Image{}, explainPull(err, domain, nil, h.cfg.RegistryConfig)
		}
		return img, nil
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
		img, err := h.engine.Pull(ctx, ref, o)
		if err == nil {
			return img, nil
		}
		last = explainPull(err, domain, creds[:i+1], h.cfg.RegistryConfig)
		if !errors.Is(err, engine.ErrUnauthorized) {
			break // another credential would not help
		}
	}
	return engine.Image{}, last
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
