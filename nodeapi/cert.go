package nodeapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/podrun/podrun/atomicfile"
	certutil "k8s.io/client-go/util/cert"
)

// ServingCertificate is the certificate the node API serves: certFile and
// keyFile when given (--tls-cert-file, --tls-private-key-file); else, as
// the kubelet without them, a self-signed one for host and ips kept in
// dir (kubelet.crt, kubelet.key, root's alone), made on first use.
func ServingCertificate(certFile, keyFile, dir, host string, ips []net.IP) (tls.Certificate, error) {
	switch {
	case certFile != "" && keyFile != "":
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate: %w", err)
		}
		return c, nil
	case certFile != "" || keyFile != "":
		return tls.Certificate{}, errors.New("serving certificate: give both the certificate and its key, or neither")
	}
	certFile, keyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate in %s: %w", dir, err)
		}
		return c, nil
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, ips, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making a serving certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	// The key first: a certificate is only ever found beside its key.
	if err := atomicfile.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, fmt.Errorf("writing the serving key: %w", err)
	}
	if err := atomicfile.WriteFile(certFile, certPEM, 0o600); err != nil {
		return tls.Certificate{}, fmt.Errorf("writing the serving certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// ClientCAs reads the client CA bundle (--client-ca-file); "" is none.
func ClientCAs(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	certs, err := certutil.CertsFromFile(file)
	if err != nil {
		return nil, fmt.Errorf("client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}
