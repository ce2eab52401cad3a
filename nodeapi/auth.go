package nodeapi

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"
)

// User is who made a request.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// errUnauthenticated is a request that proves no identity: anonymous
// requests are refused, as the kubelet's with anonymous auth off (401).
var errUnauthenticated = errors.New("no client certificate of the client CA and no bearer token")

// The kubelet's webhook caches (KubeletConfiguration authentication.webhook.cacheTTL,
// authorization.webhook.cacheAuthorizedTTL and cacheUnauthorizedTTL).
const (
	tokenCacheTTL        = 2 * time.Minute
	authorizedCacheTTL   = 5 * time.Minute
	unauthorizedCacheTTL = 30 * time.Second
	cacheSize            = 1024
)

// Authenticator identifies the caller of a request as the kubelet's
// delegating authenticator does: by a client certificate that ClientCAs
// verify, else by a bearer token the API server confirms (a TokenReview,
// the answer kept for 2 minutes).
type Authenticator struct {
	clientCAs *x509.CertPool
	tokens    authnv1client.TokenReviewInterface
	clock     clock.PassiveClock
	cache     *cache.LRUExpireCache // token's digest -> *User, or nil for a token the API server refused
}

// NewAuthenticator accepts client certificates signed by clientCAs (nil:
// none, as the kubelet without --client-ca-file) and bearer tokens that
// tokens reviews (nil: none).
func NewAuthenticator(clientCAs *x509.CertPool, tokens authnv1client.TokenReviewInterface, clk clock.PassiveClock) *Authenticator {
	return &Authenticator{clientCAs: clientCAs, tokens: tokens, clock: clk, cache: cache.NewLRUExpireCacheWithClock(cacheSize, clk)}
}

// Authenticate returns the request's user, or an error (errUnauthenticated
// when it proves nothing). A certificate that does not verify is not
// fatal while a valid token comes with it (the union of authenticators).
func (a *Authenticator) Authenticate(r *http.Request) (*User, error) {
	var errs []error
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		u, err := a.certificateUser(r.TLS.PeerCertificates)
		if err == nil {
			return u, nil
		}
		errs = append(errs, err)
	}
	if token, ok := bearerToken(r.Header.Get("Authorization")); ok {
		u, err := a.tokenUser(r.Context(), token)
		if err == nil {
			return u, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errUnauthenticated
	}
	return nil, errors.Join(errs...)
}

// certificateUser is the user a client certificate names (CN the name,
// O the groups, as the API server's x509 authenticator), once it verifies
// against the client CAs for client authentication.
func (a *Authenticator) certificateUser(chain []*x509.Certificate) (*User, error) {
	if a.clientCAs == nil {
		return nil, errors.New("client certificates are not accepted (no client CA)")
	}
	opts := x509.VerifyOptions{
		Roots:         a.clientCAs,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime:   a.clock.Now(),
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying client certificate %q: %w", chain[0].Subject.CommonName, err)
	}
	if chain[0].Subject.CommonName == "" {
		return nil, errors.New("client certificate has no common name")
	}
	return &User{Name: chain[0].Subject.CommonName, Groups: chain[0].Subject.Organization}, nil
}

// bearerToken is the token of an "Authorization: Bearer TOKEN" header.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// tokenUser asks the API server who token is (a TokenReview), or the
// answer it gave within the last 2 minutes.
func (a *Authenticator) tokenUser(ctx context.Context, token string) (*User, error) {
	if a.tokens == nil {
		return nil, errors.New("bearer tokens are not accepted (no API server)")
	}
	key := sha256.Sum256([]byte(token))
	if v, ok := a.cache.Get(key); ok {
		if u, _ := v.(*User); u != nil {
			return u, nil
		}
		return nil, errors.New("bearer token refused")
	}
	review, err := a.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("reviewing bearer token: %w", err)
	}
	st := review.Status
	if !st.Authenticated {
		a.cache.Add(key, (*User)(nil), tokenCacheTTL)
		if st.Error != "" {
			return nil, fmt.Errorf("bearer token refused: %s", st.Error)
		}
		return nil, errors.New("bearer token refused")
	}
	u := &User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	if len(st.User.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range st.User.Extra {
			u.Extra[k] = v
		}
	}
	a.cache.Add(key, u, tokenCacheTTL)
	return u, nil
}

// Attributes are what a request is authorised as: verb on the node's
// nodes/<Subresource>.
type Attributes struct {
	Verb        string
	Subresource string
}

// attributes are the attributes a request of method to path is authorised
// as, any one of which allows it: the kubelet's
// nodeAuthorizerAttributesGetter (with KubeletFineGrainedAuthz, GA since
// 1.36): verb from the method, subresource from the path's first segment,
// "proxy" when it names none.
func attributes(method, path string) []Attributes {
	verb := map[string]string{
		http.MethodPost: "create", http.MethodGet: "get", http.MethodPut: "update",
		http.MethodPatch: "patch", http.MethodDelete: "delete",
	}[method]
	var subs []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/allocatedPods"), isSubpath(path, "/runningpods"):
		subs = append(subs, "pods")
	case isSubpath(path, "/healthz"):
		subs = append(subs, "healthz")
	case isSubpath(path, "/configz"):
		subs = append(subs, "configz")
	}
	switch {
	case isSubpath(path, "/stats"):
		subs = append(subs, "stats")
	case isSubpath(path, "/metrics"):
		subs = append(subs, "metrics")
	case isSubpath(path, "/logs"):
		subs = append(subs, "log")
	case isSubpath(path, "/checkpoint"):
		subs = append(subs, "checkpoint")
	case isSubpath(path, "/statusz"):
		subs = append(subs, "statusz")
	case isSubpath(path, "/flagz"):
		subs = append(subs, "configz")
	default:
		subs = append(subs, "proxy")
	}
	attrs := make([]Attributes, len(subs))
	for i, s := range subs {
		attrs[i] = Attributes{Verb: verb, Subresource: s}
	}
	return attrs
}

// isSubpath: subpath is path or below it (the kubelet's).
func isSubpath(subpath, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return subpath == path || (strings.HasPrefix(subpath, path) && subpath[len(path)] == '/')
}

// Authorizer decides as the kubelet's webhook authorizer: it asks the API
// server (a SubjectAccessReview of verb on the node's nodes/<subresource>)
// and keeps an allow for 5 minutes, a denial for 30 seconds.
type Authorizer struct {
	node    string
	reviews authzv1client.SubjectAccessReviewInterface
	cache   *cache.LRUExpireCache // the review's spec, as JSON -> bool
}

// NewAuthorizer asks reviews about node's requests.
func NewAuthorizer(node string, reviews authzv1client.SubjectAccessReviewInterface, clk clock.PassiveClock) *Authorizer {
	return &Authorizer{node: node, reviews: reviews, cache: cache.NewLRUExpireCacheWithClock(cacheSize, clk)}
}

// Allowed says whether u may do a on this node.
func (z *Authorizer) Allowed(ctx context.Context, u *User, a Attributes) (bool, error) {
	spec := authzv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups,
		ResourceAttributes: &authzv1.ResourceAttributes{
			Verb: a.Verb, Version: "v1", Resource: "nodes", Subresource: a.Subresource, Name: z.node,
		},
	}
	if len(u.Extra) > 0 {
		spec.Extra = map[string]authzv1.ExtraValue{}
		for k, v := range u.Extra {
			spec.Extra[k] = v
		}
	}
	keyb, err := json.Marshal(spec)
	if err != nil {
		return false, err
	}
	key := string(keyb)
	if v, ok := z.cache.Get(key); ok {
		return v.(bool), nil
	}
	review, err := z.reviews.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("reviewing access: %w", err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := unauthorizedCacheTTL
	if allowed {
		ttl = authorizedCacheTTL
	}
	z.cache.Add(key, allowed, ttl)
	return allowed, nil
}
