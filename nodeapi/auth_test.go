package nodeapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// testCA is a CA that signs client certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: testNow.Add(-time.Hour), NotAfter: testNow.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// client is a client certificate cn/orgs signed by ca, valid until notAfter.
func (ca *testCA) client(t *testing.T, cn string, orgs []string, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: testNow.Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// tokenReviews answers TokenReviews: tokens it knows are their users.
func tokenReviews(users map[string]authnv1.UserInfo, calls *atomic.Int32) *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		if tr.Spec.Token == "broken" {
			return true, nil, errors.New("API server unreachable")
		}
		u, ok := users[tr.Spec.Token]
		out := tr.DeepCopy()
		out.Status = authnv1.TokenReviewStatus{Authenticated: ok, User: u}
		if !ok {
			out.Status.Error = "invalid bearer token"
		}
		return true, out, nil
	})
	return cs
}

func TestAuthenticate(t *testing.T) {
	ca, other := newTestCA(t, "cluster-ca"), newTestCA(t, "another-ca")
	apiserver := ca.client(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, testNow.Add(time.Hour))
	expired := ca.client(t, "old", nil, testNow.Add(-time.Minute))
	foreign := other.client(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, testNow.Add(time.Hour))
	var calls atomic.Int32
	cs := tokenReviews(map[string]authnv1.UserInfo{"good": {Username: "alice", UID: "u1", Groups: []string{"devs"}, Extra: map[string]authnv1.ExtraValue{"k": {"v"}}}}, &calls)
	clk := clocktesting.NewFakeClock(testNow)
	a := NewAuthenticator(ca.pool, cs.AuthenticationV1().TokenReviews(), clk)

	for _, tc := range []struct {
		name   string
		certs  []tls.Certificate
		header string
		want   *User // nil: refused
		unauth bool  // refused as anonymous (errUnauthenticated)
	}{
		{name: "the API server's client certificate", certs: []tls.Certificate{apiserver}, want: &User{Name: "kube-apiserver-kubelet-client", Groups: []string{"system:masters"}}},
		{name: "a certificate of another CA", certs: []tls.Certificate{foreign}},
		{name: "an expired certificate", certs: []tls.Certificate{expired}},
		{name: "nothing", unauth: true},
		{name: "a reviewed token", header: "Bearer good", want: &User{Name: "alice", UID: "u1", Groups: []string{"devs"}, Extra: map[string][]string{"k": {"v"}}}},
		{name: "a refused token", header: "Bearer bad"},
		{name: "a token the API server cannot review", header: "Bearer broken"},
		{name: "not a bearer token", header: "Basic Zm9vOmJhcg==", unauth: true},
		{name: "an empty bearer token", header: "Bearer ", unauth: true},
		{name: "a bad certificate, a good token", certs: []tls.Certificate{foreign}, header: "bearer good", want: &User{Name: "alice", UID: "u1", Groups: []string{"devs"}, Extra: map[string][]string{"k": {"v"}}}},
	} {
		r := httptest.NewRequest("GET", "/healthz", nil)
		if len(tc.certs) > 0 {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.certs[0].Leaf}}
		}
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		u, err := a.Authenticate(r)
		switch {
		case tc.want != nil && (err != nil || !reflect.DeepEqual(u, tc.want)):
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, u, err, tc.want)
		case tc.want == nil && err == nil:
			t.Errorf("%s: got %+v, want refused", tc.name, u)
		case tc.want == nil && errors.Is(err, errUnauthenticated) != tc.unauth:
			t.Errorf("%s: got %v, want anonymous refusal %v", tc.name, err, tc.unauth)
		}
	}
}

// TestAuthenticateCachesTokenReviews: a token's review (yes or no) is
// kept for 2 minutes, as the kubelet's webhook cache; an error is not.
func TestAuthenticateCachesTokenReviews(t *testing.T) {
	var calls atomic.Int32
	cs := tokenReviews(map[string]authnv1.UserInfo{"good": {Username: "alice"}}, &calls)
	clk := clocktesting.NewFakeClock(testNow)
	a := NewAuthenticator(nil, cs.AuthenticationV1().TokenReviews(), clk)
	ask := func(token string) error {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		_, err := a.Authenticate(r)
		return err
	}
	for _, step := range []struct {
		token   string
		advance time.Duration
		ok      bool
		calls   int32
	}{
		{"good", 0, true, 1},
		{"good", time.Minute, true, 1},
		{"bad", 0, false, 2},
		{"bad", 0, false, 2},
		{"broken", 0, false, 3},
		{"broken", 0, false, 4},
		{"good", 61 * time.Second, true, 5}, // 2 minutes and 1 s after the first review
	} {
		clk.Step(step.advance)
		if err := ask(step.token); (err == nil) != step.ok || calls.Load() != step.calls {
			t.Fatalf("%s after %v: err %v, %d reviews; want ok %v, %d reviews", step.token, step.advance, err, calls.Load(), step.ok, step.calls)
		}
	}
}

// TestAuthenticateWithoutClientCA: without a client CA (no
// --client-ca-file) no certificate is accepted.
func TestAuthenticateWithoutClientCA(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	a := NewAuthenticator(nil, nil, clocktesting.NewFakeClock(testNow))
	r := httptest.NewRequest("GET", "/healthz", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{ca.client(t, "admin", nil, testNow.Add(time.Hour)).Leaf}}
	if u, err := a.Authenticate(r); err == nil {
		t.Fatalf("got %+v, want refused", u)
	}
}

func TestAttributes(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         []Attributes
	}{
		{"GET", "/containerLogs/default/web/app", []Attributes{{"get", "proxy"}}},
		{"POST", "/exec/default/web/app", []Attributes{{"create", "proxy"}}},
		{"GET", "/exec/default/web/app", []Attributes{{"get", "proxy"}}},
		{"POST", "/attach/default/web/app", []Attributes{{"create", "proxy"}}},
		{"POST", "/portForward/default/web", []Attributes{{"create", "proxy"}}},
		{"GET", "/healthz", []Attributes{{"get", "healthz"}, {"get", "proxy"}}},
		{"GET", "/healthz/ping", []Attributes{{"get", "healthz"}, {"get", "proxy"}}},
		{"GET", "/healthzz", []Attributes{{"get", "proxy"}}},
		{"GET", "/pods", []Attributes{{"get", "pods"}, {"get", "proxy"}}},
		{"GET", "/runningpods/", []Attributes{{"get", "pods"}, {"get", "proxy"}}},
		{"GET", "/configz", []Attributes{{"get", "configz"}, {"get", "proxy"}}},
		{"GET", "/stats/summary", []Attributes{{"get", "stats"}}},
		{"GET", "/metrics/cadvisor", []Attributes{{"get", "metrics"}}},
		{"GET", "/logs/syslog", []Attributes{{"get", "log"}}},
		{"POST", "/checkpoint/default/web/app", []Attributes{{"create", "checkpoint"}}},
		{"GET", "/statusz", []Attributes{{"get", "statusz"}}},
		{"GET", "/flagz", []Attributes{{"get", "configz"}}},
		{"PUT", "/x", []Attributes{{"update", "proxy"}}},
		{"PATCH", "/x", []Attributes{{"patch", "proxy"}}},
		{"DELETE", "/x", []Attributes{{"delete", "proxy"}}},
		{"OPTIONS", "/x", []Attributes{{"", "proxy"}}},
	} {
		if got := attributes(tc.method, tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: got %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// accessReviews answers SubjectAccessReviews with decide, recording them.
func accessReviews(decide func(authzv1.SubjectAccessReviewSpec) (bool, error), seen *[]authzv1.SubjectAccessReviewSpec) *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview)
		*seen = append(*seen, sar.Spec)
		ok, err := decide(sar.Spec)
		if err != nil {
			return true, nil, err
		}
		out := sar.DeepCopy()
		out.Status.Allowed = ok
		return true, out, nil
	})
	return cs
}

// TestAuthorizerCaches: an allow is kept 5 minutes, a denial 30 seconds.
func TestAuthorizerCaches(t *testing.T) {
	var seen []authzv1.SubjectAccessReviewSpec
	cs := accessReviews(func(s authzv1.SubjectAccessReviewSpec) (bool, error) { return s.User == "alice", nil }, &seen)
	clk := clocktesting.NewFakeClock(testNow)
	z := NewAuthorizer("node1", cs.AuthorizationV1().SubjectAccessReviews(), clk)
	alice, bob := &User{Name: "alice", Groups: []string{"devs"}}, &User{Name: "bob"}
	a := Attributes{Verb: "create", Subresource: "proxy"}
	for i, step := range []struct {
		u       *User
		advance time.Duration
		allowed bool
		reviews int
	}{
		{alice, 0, true, 1},
		{alice, 4 * time.Minute, true, 1},
		{bob, 0, false, 2},
		{bob, 29 * time.Second, false, 2},
		{bob, 2 * time.Second, false, 3},
		{alice, 2 * time.Minute, true, 4},
	} {
		clk.Step(step.advance)
		ok, err := z.Allowed(context.Background(), step.u, a)
		if err != nil || ok != step.allowed || len(seen) != step.reviews {
			t.Fatalf("step %d: %v, %v after %d reviews; want %v after %d", i, ok, err, len(seen), step.allowed, step.reviews)
		}
	}
	want := authzv1.SubjectAccessReviewSpec{User: "alice", Groups: []string{"devs"}, ResourceAttributes: &authzv1.ResourceAttributes{
		Verb: "create", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: "node1"}}
	if !reflect.DeepEqual(seen[0], want) {
		t.Errorf("review: got %+v, want %+v", seen[0], want)
	}
}

// authServer is a Server whose requests are authenticated by ca's client
// certificates and authorised by decide.
func authServer(t *testing.T, ca *testCA, decide func(authzv1.SubjectAccessReviewSpec) (bool, error), c Config) (*Server, *[]authzv1.SubjectAccessReviewSpec) {
	t.Helper()
	seen := &[]authzv1.SubjectAccessReviewSpec{}
	clk := clocktesting.NewFakeClock(testNow)
	c.Authenticator = NewAuthenticator(ca.pool, nil, clk)
	c.Authorizer = NewAuthorizer("node1", accessReviews(decide, seen).AuthorizationV1().SubjectAccessReviews(), clk)
	c.Clock = clk
	c.Log = discardLog
	return New(c), seen
}

// TestServeHTTPAuth: nothing is served without an identity (401) or
// without the API server's yes (403); an API server that cannot answer is
// a 500.
func TestServeHTTPAuth(t *testing.T) {
	ca, other := newTestCA(t, "cluster-ca"), newTestCA(t, "another-ca")
	apiserver := ca.client(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, testNow.Add(time.Hour))
	node := ca.client(t, "system:node:other", []string{"system:nodes"}, testNow.Add(time.Hour))
	broken := ca.client(t, "broken", nil, testNow.Add(time.Hour))
	foreign := other.client(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, testNow.Add(time.Hour))
	s, seen := authServer(t, ca, func(spec authzv1.SubjectAccessReviewSpec) (bool, error) {
		if spec.User == "broken" {
			return false, errors.New("API server unreachable")
		}
		return len(spec.Groups) > 0 && spec.Groups[0] == "system:masters", nil
	}, Config{})
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		path string
		code int
	}{
		{"the API server's certificate", &apiserver, "/healthz", http.StatusOK},
		{"no certificate", nil, "/healthz", http.StatusUnauthorized},
		{"no certificate, a path not served", nil, "/pods", http.StatusUnauthorized},
		{"another CA's certificate", &foreign, "/healthz", http.StatusUnauthorized},
		{"a user the API server does not allow", &node, "/healthz", http.StatusForbidden},
		{"an API server that cannot answer", &broken, "/healthz", http.StatusInternalServerError},
		{"a path not served", &apiserver, "/pods", http.StatusNotFound},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.cert != nil {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.cert.Leaf}}
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("%s: got %d %q, want %d", tc.name, w.Code, w.Body.String(), tc.code)
		}
	}
	// /healthz asks about nodes/healthz, then nodes/proxy (the kubelet's fine-grained authz).
	var subs []string
	for _, spec := range *seen {
		if spec.User == "system:node:other" {
			subs = append(subs, spec.ResourceAttributes.Subresource)
		}
	}
	if !reflect.DeepEqual(subs, []string{"healthz", "proxy"}) {
		t.Errorf("reviews of a forbidden /healthz: %v, want [healthz proxy]", subs)
	}
}
