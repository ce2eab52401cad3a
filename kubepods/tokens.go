package kubepods

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/manifest"
)

// The kubelet's token manager's bounds (pkg/kubelet/token): a token is
// renewed once older than tokenMaxAge or 80% of its time to live, less a
// random jitter of up to tokenMaxJitter so that the pods of a node do not
// renew at once.
const (
	tokenMaxAge    = 24 * time.Hour
	tokenMaxJitter = 10 * time.Second
)

// Tokens are the projected service account tokens of the pods bound to
// the node, as the kubelet's token manager keeps them: a TokenRequest per
// (service account, namespace, audiences, expiration, bound pod), reused
// until it needs renewing (renew), the last one kept while the API server
// refuses a renewal and it has not expired. One goroutine uses it (the
// Source's).
type Tokens struct {
	// Request is the TokenRequest call (CreateToken of the service
	// account's token subresource).
	Request func(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
	Clock   clock.PassiveClock
	// Jitter draws the jitter of one renewal decision, in [0, tokenMaxJitter).
	Jitter func() time.Duration

	cache map[string]*authenticationv1.TokenRequest // by tokenKey
}

// NewTokens returns the token manager of a node whose client is client.
func NewTokens(client API, clk clock.PassiveClock) *Tokens {
	return &Tokens{
		Request: func(ctx context.Context, namespace, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
			return client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
		},
		Clock: clk,
		// Whole seconds, as the kubelet's.
		Jitter: func() time.Duration { return time.Duration(rand.Float64()*tokenMaxJitter.Seconds()) * time.Second },
	}
}

// ForPod returns the tokens of pod's projected serviceAccountToken
// sources, by manifest.TokenKey (nil when it has none), each requested as
// the kubelet's projected volume plugin requests it: for the pod's service
// account, with the source's audience and expirationSeconds, bound to the
// pod (the Node authorizer lets a node request exactly these). An error
// names the first token that could not be had: the pod's volumes cannot be
// written, it waits (the kubelet fails the volume's mount and retries).
func (t *Tokens) ForPod(ctx context.Context, pod *corev1.Pod) (map[string]*authenticationv1.TokenRequest, error) {
	var out map[string]*authenticationv1.TokenRequest
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			tp := s.ServiceAccountToken
			if tp == nil {
				continue
			}
			tr, err := t.get(ctx, pod.Namespace, pod.Spec.ServiceAccountName, tokenRequest(pod, tp))
			if err != nil {
				return nil, fmt.Errorf("service account token of volume %q (%s): %w", v.Name, tp.Path, err)
			}
			if out == nil {
				out = map[string]*authenticationv1.TokenRequest{}
			}
			out[manifest.TokenKey(v.Name, tp.Path)] = tr
		}
	}
	return out, nil
}

// tokenRequest is what the kubelet's projected plugin asks for a source of
// pod.
func tokenRequest(pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	var auds []string
	if tp.Audience != "" {
		auds = []string{tp.Audience}
	}
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         auds,
		ExpirationSeconds: tp.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
}

// get is the kubelet's GetServiceAccountToken: the cached token unless it
// needs renewing; else a new one; when that fails, the cached one while it
// has not expired (the error only logged by the kubelet: here the caller
// gets the token, the failure is for the next try).
func (t *Tokens) get(ctx context.Context, namespace, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := tokenKey(namespace, sa, tr)
	cached, ok := t.cache[key]
	now := t.Clock.Now()
	if ok && !renew(now, cached, t.Jitter()) {
		return cached, nil
	}
	rctx, cancel := context.WithTimeout(ctx, callTimeout)
	got, err := t.Request(rctx, namespace, sa, tr)
	cancel()
	switch {
	case err == nil:
		if t.cache == nil {
			t.cache = map[string]*authenticationv1.TokenRequest{}
		}
		t.cache[key] = got
		return got, nil
	case !ok:
		return nil, fmt.Errorf("requesting a token for service account %s/%s: %w", namespace, sa, err)
	case now.After(cached.Status.ExpirationTimestamp.Time):
		return nil, fmt.Errorf("token of service account %s/%s expired and its renewal failed: %w", namespace, sa, err)
	}
	return cached, nil
}

// Forget drops the tokens of the pods not in live (the kubelet's
// DeleteServiceAccountToken when a pod is gone) and the expired ones (its
// cleanup).
func (t *Tokens) Forget(live map[types.UID]bool) {
	now := t.Clock.Now()
	for k, tr := range t.cache {
		if !live[tr.Spec.BoundObjectRef.UID] || now.After(tr.Status.ExpirationTimestamp.Time) {
			delete(t.cache, k)
		}
	}
}

// renew is the kubelet's requiresRefresh: a token is renewed once older
// than 24 h or than 80% of its time to live (its issue time is its expiry
// less the expirationSeconds asked), each less jitter, or when it was
// issued after now (the clock went back). A token without
// expirationSeconds is never renewed.
func renew(now time.Time, tr *authenticationv1.TokenRequest, jitter time.Duration) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	iat := exp.Add(-ttl)
	switch {
	case now.After(iat.Add(tokenMaxAge - jitter)):
		return true
	case now.After(exp.Add(-time.Duration(*tr.Spec.ExpirationSeconds*20/100)*time.Second - jitter)):
		return true
	}
	return now.Before(iat)
}

// tokenKey is the kubelet's keyFunc: what a token is cached by (nothing
// secret in it).
func tokenKey(namespace, sa string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v", sa, namespace, tr.Spec.Audiences, exp, ref)
}

// withTokens gives p, read from the API's pod, the tokens of its projected
// serviceAccountToken sources; an error (a token the API server does not
// issue) leaves the pod waiting, with the reason among the problems, and
// it is tried again soon (failed).
func (s *Source) withTokens(ctx context.Context, pod *corev1.Pod, p *manifest.Pod) error {
	tokens, err := s.tokens.ForPod(ctx, pod)
	if err != nil {
		s.failed = true
		return err
	}
	p.Tokens = tokens
	return nil
}

// forgetTokens drops the tokens of the pods no longer bound to the node
// (seen: the UIDs of those that are) and the expired ones.
func (s *Source) forgetTokens(seen map[string]bool) {
	live := make(map[types.UID]bool, len(seen))
	for uid := range seen {
		live[types.UID(uid)] = true
	}
	s.tokens.Forget(live)
}

// tokensPrint is what tells a renewed token of p in the source's
// fingerprint (its expiry; never the token), so that the daemon writes it
// into the running pod's volume.
func tokensPrint(p *manifest.Pod) string {
	keys := make([]string, 0, len(p.Tokens))
	for k := range p.Tokens {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " token/%s@%s", k, p.Tokens[k].Status.ExpirationTimestamp.UTC().Format(time.RFC3339Nano))
	}
	return b.String()
}
