package nodeapi

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestServingCertificate: made once for the node's name and address, kept
// root-only, the same one read back; given files win; one file alone is
// refused.
func TestServingCertificate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ip := net.ParseIP("192.0.2.10")
	first, err := ServingCertificate("", "", dir, "node1", []net.IP{ip})
	if err != nil {
		t.Fatal(err)
	}
	leaf := first.Leaf
	if leaf.VerifyHostname("node1") != nil || leaf.VerifyHostname("192.0.2.10") != nil {
		t.Errorf("certificate names %v %v, want node1 and 192.0.2.10", leaf.DNSNames, leaf.IPAddresses)
	}
	for _, f := range []string{"kubelet.crt", "kubelet.key"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, st.Mode().Perm())
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v; want a 0700 directory", dir, err)
	}
	again, err := ServingCertificate("", "", dir, "node1", []net.IP{ip})
	if err != nil || !bytes.Equal(again.Certificate[0], first.Certificate[0]) {
		t.Errorf("second start: %v, a new certificate %v", err, !bytes.Equal(again.Certificate[0], first.Certificate[0]))
	}
	given, err := ServingCertificate(filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key"), t.TempDir(), "other", nil)
	if err != nil || !bytes.Equal(given.Certificate[0], first.Certificate[0]) {
		t.Errorf("given files: %v", err)
	}
	if _, err := ServingCertificate(filepath.Join(dir, "kubelet.crt"), "", dir, "node1", nil); err == nil {
		t.Error("a certificate without its key: accepted")
	}
	if _, err := ServingCertificate(filepath.Join(dir, "nope.crt"), filepath.Join(dir, "nope.key"), dir, "node1", nil); err == nil {
		t.Error("missing given files: accepted")
	}
}

func TestClientCAs(t *testing.T) {
	if pool, err := ClientCAs(""); pool != nil || err != nil {
		t.Errorf("no file: %v, %v; want none", pool, err)
	}
	if _, err := ClientCAs(filepath.Join(t.TempDir(), "missing.crt")); err == nil {
		t.Error("a missing file: accepted")
	}
	dir := t.TempDir()
	if _, err := ServingCertificate("", "", dir, "node1", nil); err != nil {
		t.Fatal(err)
	}
	if pool, err := ClientCAs(filepath.Join(dir, "kubelet.crt")); pool == nil || err != nil {
		t.Errorf("a PEM bundle: %v, %v", pool, err)
	}
}
