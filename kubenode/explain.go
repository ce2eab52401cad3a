package kubenode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// What a call to the API server that failed says of the node's input: its
// kubeconfig file, the server it names, the CA it trusts, the client
// certificate it presents. Told once per streak of failures (Streak), not
// at every retry.

// Class is the kind of a failed call to the API server.
type Class string

// The classes of Classify.
const (
	// Unreachable: no answer (connection refused, no route, a name
	// that does not resolve, a timeout).
	Unreachable Class = "unreachable"
	// UnknownAuthority: the server's certificate is not signed by the
	// kubeconfig's certificate-authority (another server, another CA).
	UnknownAuthority Class = "unknown-authority"
	// ServerCertificate: the server's certificate is refused otherwise
	// (expired, not for its address).
	ServerCertificate Class = "server-certificate"
	// Unauthorized: the server refused the node's credentials (401): a
	// client certificate of another CA, expired, or revoked.
	Unauthorized Class = "unauthorized"
	// Forbidden: the credentials are not allowed the call (403).
	Forbidden Class = "forbidden"
	// Other: anything else the server answered or the client met.
	Other Class = "other"
)

// Classify is the kind of err, a call to the API server that failed.
func Classify(err error) Class {
	var ua x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	var op *net.OpError
	var dns *net.DNSError
	var timeout interface{ Timeout() bool }
	msg := err.Error()
	switch {
	case errors.As(err, &ua) || strings.Contains(msg, "x509: certificate signed by unknown authority"):
		return UnknownAuthority
	case errors.As(err, &invalid) || errors.As(err, &host) || errors.As(err, &verify) || strings.Contains(msg, "x509: "):
		return ServerCertificate
	case apierrors.IsUnauthorized(err):
		return Unauthorized
	case apierrors.IsForbidden(err):
		return Forbidden
	case errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &timeout) && timeout.Timeout()):
		return Unreachable
	}
	return Other
}

// Creds are what the node calls the API server with, named in messages.
type Creds struct {
	Kubeconfig string // the file
	Server     string // its server
	// ClientCert is the node's client certificate (nil: none, or not
	// readable: then the kubeconfig's error is the client's).
	ClientCert *x509.Certificate
}

// CredsOf are the credentials of kubeconfig file, whose client
// configuration is rc.
func CredsOf(file string, rc *rest.Config) Creds {
	c := Creds{Kubeconfig: file, Server: rc.Host}
	data := rc.CertData
	if len(data) == 0 && rc.CertFile != "" {
		data, _ = os.ReadFile(rc.CertFile) // not readable: the client says so
	}
	if b, _ := pem.Decode(data); b != nil && b.Type == "CERTIFICATE" {
		c.ClientCert, _ = x509.ParseCertificate(b.Bytes)
	}
	return c
}

// CertProblem says what is wrong with the client certificate at now
// (expired, not valid yet), or "".
func (c Creds) CertProblem(now time.Time) string {
	cert := c.ClientCert
	switch {
	case cert == nil:
		return ""
	case now.After(cert.NotAfter):
		return fmt.Sprintf("the node's client certificate (%s) in the kubeconfig %s expired at %s (x509: certificate has expired): the API server refuses it; mint the node a new one",
			cert.Subject, c.Kubeconfig, cert.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(cert.NotBefore):
		return fmt.Sprintf("the node's client certificate (%s) in the kubeconfig %s is not valid before %s (x509: certificate is not yet valid; is this machine's clock right?): the API server refuses it",
			cert.Subject, c.Kubeconfig, cert.NotBefore.UTC().Format(time.RFC3339))
	}
	return ""
}

// Explain says what err, a call to the API server that failed at now,
// means of the node's input.
func (c Creds) Explain(err error, now time.Time) string {
	switch Classify(err) {
	case Unreachable:
		return fmt.Sprintf("the API server %s of the kubeconfig %s is unreachable: %v", c.Server, c.Kubeconfig, err)
	case UnknownAuthority:
		return fmt.Sprintf("the API server %s is not the one the kubeconfig %s trusts: its certificate is not signed by the kubeconfig's certificate-authority (another server or another CA): %v", c.Server, c.Kubeconfig, err)
	case ServerCertificate:
		return fmt.Sprintf("the certificate of the API server %s of the kubeconfig %s is refused: %v", c.Server, c.Kubeconfig, err)
	case Unauthorized:
		why := "its client certificate is not signed by a CA the API server trusts, or it was revoked"
		if c.ClientCert == nil {
			why = "its credentials are not the API server's to accept"
		}
		if p := c.CertProblem(now); p != "" {
			why = p
		}
		return fmt.Sprintf("the API server %s refused the node's credentials of the kubeconfig %s (401 Unauthorized): %s", c.Server, c.Kubeconfig, why)
	case Forbidden:
		return fmt.Sprintf("the API server %s forbids the node's credentials of the kubeconfig %s this (are they system:node:NAME's, of this node?): %v", c.Server, c.Kubeconfig, err)
	}
	return fmt.Sprintf("the API server %s of the kubeconfig %s: %v", c.Server, c.Kubeconfig, err)
}

// Streak tells when a call that keeps failing is worth a message: at the
// first failure, and when the failure changes (another Class, or another
// error of the Other class); not at each retry. Its zero value is a call
// that has not failed. Not safe for concurrent use.
type Streak struct {
	failing string // what the last failure was, "" while the call succeeds
}

// Failed is a failure of the call, err: whether to tell of it.
func (s *Streak) Failed(err error) bool {
	what := string(Classify(err))
	if what == string(Other) {
		what += ": " + err.Error()
	}
	tell := what != s.failing
	s.failing = what
	return tell
}

// Succeeded is a success of the call: whether a streak of failures ended
// (to tell that it works again).
func (s *Streak) Succeeded() bool {
	ended := s.failing != ""
	s.failing = ""
	return ended
}
