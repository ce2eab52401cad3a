package kubenode

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// get is a client-go call's error as its transport returns it.
func get(err error) error {
	return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/nodes/vm", Err: err}
}

func TestClassify(t *testing.T) {
	unknownCA := get(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}})
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"another CA", unknownCA, UnknownAuthority},
		{"another CA, through the reflector", fmt.Errorf("failed to list *v1.Pod: %w", unknownCA), UnknownAuthority},
		{"another CA, as text only", errors.New(`Get "https://127.0.0.1:6443/api": tls: failed to verify certificate: x509: certificate signed by unknown authority`), UnknownAuthority},
		{"server certificate expired", get(&tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.Expired}}), ServerCertificate},
		{"server certificate for another name", get(x509.HostnameError{Host: "10.0.0.1", Certificate: &x509.Certificate{}}), ServerCertificate},
		{"401", apierrors.NewUnauthorized("Unauthorized"), Unauthorized},
		{"401, through the reflector", fmt.Errorf("failed to list *v1.Pod: %w", apierrors.NewUnauthorized("Unauthorized")), Unauthorized},
		{"403", apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "vm", errors.New("no")), Forbidden},
		{"connection refused", get(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), Unreachable},
		{"no such host", get(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.example"}}), Unreachable},
		{"client timeout", get(context.DeadlineExceeded), Unreachable},
		{"a 500", apierrors.NewInternalError(errors.New("etcd")), Other},
		{"anything else", errors.New("something"), Other},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
}

// cert is a client certificate valid from notBefore to notAfter.
func cert(t *testing.T, notBefore, notAfter time.Time) ([]byte, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:vm", Organization: []string{"system:nodes"}},
		NotBefore: notBefore, NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), c
}

var now = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)

func TestCredsOf(t *testing.T) {
	pemData, _ := cert(t, now.Add(-time.Hour), now.Add(time.Hour))
	file := filepath.Join(t.TempDir(), "node.crt")
	if err := os.WriteFile(file, pemData, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rc   rest.Config
		cert bool
	}{
		{"inline", rest.Config{Host: "https://a:6443", TLSClientConfig: rest.TLSClientConfig{CertData: pemData}}, true},
		{"a file", rest.Config{Host: "https://a:6443", TLSClientConfig: rest.TLSClientConfig{CertFile: file}}, true},
		{"a file not there", rest.Config{Host: "https://a:6443", TLSClientConfig: rest.TLSClientConfig{CertFile: file + ".gone"}}, false},
		{"a token", rest.Config{Host: "https://a:6443", BearerToken: "x"}, false},
	} {
		c := CredsOf("/etc/node.kubeconfig", &tc.rc)
		if c.Kubeconfig != "/etc/node.kubeconfig" || c.Server != "https://a:6443" || (c.ClientCert != nil) != tc.cert {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
}

func TestCertProblem(t *testing.T) {
	_, valid := cert(t, now.Add(-time.Hour), now.Add(time.Hour))
	_, expired := cert(t, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	_, future := cert(t, now.Add(time.Hour), now.Add(48*time.Hour))
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		want string // in the problem; "" no problem
	}{
		{"none", nil, ""},
		{"valid", valid, ""},
		{"expired", expired, "expired at 2026-11-28T20:00:00Z (x509: certificate has expired)"},
		{"not yet valid", future, "is not valid before 2026-11-29T21:00:00Z (x509: certificate is not yet valid"},
	} {
		got := Creds{Kubeconfig: "/etc/node.kubeconfig", ClientCert: tc.cert}.CertProblem(now)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || (got != "" && !strings.Contains(got, "/etc/node.kubeconfig")) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestExplain(t *testing.T) {
	_, valid := cert(t, now.Add(-time.Hour), now.Add(time.Hour))
	_, expired := cert(t, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	unauthorized := apierrors.NewUnauthorized("Unauthorized")
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		err  error
		want []string
	}{
		{"unreachable", valid, get(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}),
			[]string{"the API server https://127.0.0.1:6443 of the kubeconfig /etc/node.kubeconfig is unreachable", "connection refused"}},
		{"another CA", valid, get(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}),
			[]string{"the API server https://127.0.0.1:6443 is not the one the kubeconfig /etc/node.kubeconfig trusts", "x509: certificate signed by unknown authority"}},
		{"refused, the certificate valid", valid, unauthorized,
			[]string{"refused the node's credentials of the kubeconfig /etc/node.kubeconfig (401 Unauthorized)", "not signed by a CA the API server trusts"}},
		{"refused, the certificate expired", expired, unauthorized,
			[]string{"(401 Unauthorized)", "expired at 2026-11-28T20:00:00Z (x509: certificate has expired)"}},
		{"refused, a token", nil, unauthorized, []string{"(401 Unauthorized)", "not the API server's to accept"}},
		{"forbidden", valid, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "vm", errors.New("no")), []string{"forbids", "system:node:NAME"}},
		{"other", valid, errors.New("something"), []string{"the API server https://127.0.0.1:6443 of the kubeconfig /etc/node.kubeconfig: something"}},
	} {
		got := Creds{Kubeconfig: "/etc/node.kubeconfig", Server: "https://127.0.0.1:6443", ClientCert: tc.cert}.Explain(tc.err, now)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q has no %q", tc.name, got, w)
			}
		}
	}
}

// TestStreak: told at the first failure and when it changes, not at each
// retry; its end told once.
func TestStreak(t *testing.T) {
	refused := get(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	refused2 := get(&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{Port: 2}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	unauthorized := apierrors.NewUnauthorized("Unauthorized")
	var s Streak
	for i, step := range []struct {
		err  error // nil: a success
		tell bool
	}{
		{nil, false}, // no streak to end
		{refused, true},
		{refused, false},
		{refused2, false}, // the same class
		{unauthorized, true},
		{unauthorized, false},
		{errors.New("a"), true},
		{errors.New("a"), false},
		{errors.New("b"), true}, // another error of the Other class
		{nil, true},             // the streak ended
		{nil, false},
		{unauthorized, true}, // a new streak
	} {
		var tell bool
		if step.err == nil {
			tell = s.Succeeded()
		} else {
			tell = s.Failed(step.err)
		}
		if tell != step.tell {
			t.Errorf("step %d (%v): tell %t, want %t", i, step.err, tell, step.tell)
		}
	}
}
