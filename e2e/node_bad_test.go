package e2e

// Bad input to a node (issue 39, acceptance 7): a kubeconfig whose server
// is unreachable or not the cluster's (another CA), a node certificate the
// API server refuses (another CA, expired), a kept state file damaged or
// of another cluster. Each gets a clear error, said once, and changes
// nothing on the device: the pods on it run on, the kept state stays. (A
// pod the node cannot admit is TestNodeRunsAPIPods': Failed in the API with
// the kubelet's reason.)

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podrun/podrun/internal/testimage"
	"github.com/podrun/podrun/kubenode/kept"
)

// badInputPod is the API's pod on the node while its input goes bad.
const badInputPod = `apiVersion: v1
kind: Pod
metadata: {name: bad-api, labels: {test: badinput}}
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// TestNodeBadInput: a node running an API pod and a static pod is started
// again with each bad kubeconfig; then with a damaged kept file and one
// of another cluster beside its own.
func TestNodeBadInput(t *testing.T) {
	cp := startControlPlane(t)
	name := H.Node
	kc := cp.nodeKubeconfig(t, name)
	image := H.ImportImage(t, testimage.Config{Ref: "podrun.test/bad-input:1"})
	dir := t.TempDir()
	writeInPlace(t, dir, "static.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, image))
	static := "static-" + name
	keptDir := kept.Dir(H.Root)
	// What is kept is this test's: nothing of it is left for the next.
	t.Cleanup(func() { os.RemoveAll(keptDir) })

	d := startDaemon(t, dir, nil, "--kubeconfig", kc)
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	eventually(t, 60*time.Second, "the default ServiceAccount", func() (bool, string) {
		out, err := cp.kubectl("", "get", "serviceaccount", "default")
		return err == nil, out
	})
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(badInputPod, name, image)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.kubectl("", "apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	api := cp.waitAPIPods(t, "test=badinput", 1, 120*time.Second)[0]
	keptFile := filepath.Join(keptDir, "pods", string(api.UID)+".json")
	eventually(t, 30*time.Second, "the static pod Running and the API's kept", func() (bool, string) {
		_, err := os.Stat(keptFile)
		return podsOnNode(t)[static] == corev1.PodRunning && err == nil, fmt.Sprint(podsOnNode(t), err)
	})
	running := containersOnNode(t)
	if running["bad-api"] == "" || running[static] == "" {
		t.Fatalf("containers on the node: %v", running)
	}
	if code, _ := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}
	keptBefore := readTree(t, keptDir)

	// The bad kubeconfigs, from the good one's parts.
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	nodeCert, err := os.ReadFile(rc.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	nodeKey, err := os.ReadFile(rc.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	clusterCA, err := os.ReadFile(rc.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	caCert, caKey := readCA(t, rc.CAFile, filepath.Join(filepath.Dir(rc.CAFile), "ca.key"))
	otherCert, otherKey := newCA(t, "another-ca")
	otherCAPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: otherCert.Raw})
	now := time.Now()
	foreignCert, foreignKey := issueClient(t, otherCert, otherKey, name, now.Add(-time.Hour), now.Add(24*time.Hour))
	expiredCert, expiredKey := issueClient(t, caCert, caKey, name, now.Add(-48*time.Hour), now.Add(-24*time.Hour))

	for _, tc := range []struct {
		name       string
		server     string
		ca         []byte
		cert, key  []byte
		want       []string // on stderr
		registered string   // the registration's failure, said once
	}{
		{"unreachable server", "https://127.0.0.1:1", clusterCA, nodeCert, nodeKey,
			[]string{"of the kubeconfig %s is unreachable", "connection refused"}, "registering the node"},
		{"server of another CA", rc.Host, otherCAPEM, nodeCert, nodeKey,
			[]string{"is not the one the kubeconfig %s trusts", "x509: certificate signed by unknown authority"}, "registering the node"},
		{"node certificate of another CA", rc.Host, clusterCA, foreignCert, foreignKey,
			[]string{"refused the node's credentials of the kubeconfig %s (401 Unauthorized)", "not signed by a CA the API server trusts"}, "registering the node"},
		{"node certificate expired", rc.Host, clusterCA, expiredCert, expiredKey,
			[]string{"refused the node's credentials of the kubeconfig %s (401 Unauthorized)", "x509: certificate has expired"}, "registering the node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := writeKubeconfig(t, tc.server, tc.ca, tc.cert, tc.key)
			d := startDaemon(t, dir, nil, "--kubeconfig", bad, "--resync", "2s")
			began := time.Now()
			eventually(t, 30*time.Second, "the error on stderr", func() (bool, string) {
				out := d.stderr()
				for _, w := range tc.want {
					if strings.Contains(w, "%s") {
						w = fmt.Sprintf(w, bad)
					}
					if !strings.Contains(out, w) {
						return false, out
					}
				}
				return true, ""
			})
			t.Logf("said %v after the daemon started", time.Since(began).Round(time.Millisecond))
			// The registration is retried at 0.1, 0.2, 0.4, ... 6.4 s, the
			// pods' list at 0.8, 1.6, 3.2 s (client-go's back-off): several
			// retries of each, each failure said once.
			time.Sleep(10 * time.Second)
			out := d.stderr()
			if n := strings.Count(out, tc.registered); n != 1 {
				t.Errorf("%q said %d times, want once:\n%s", tc.registered, n, out)
			}
			if n := strings.Count(out, "listing the pods bound to the node"); n > 1 {
				t.Errorf("the pods' list's failure said %d times, want once at most:\n%s", n, out)
			}
			if n := strings.Count(out, "Failed to watch"); n != 0 {
				t.Errorf("client-go's %q said %d times, want never (the source says it once):\n%s", "Failed to watch", n, out)
			}
			// Nothing changed on the device: the same containers, the
			// kept state as it was.
			if now := containersOnNode(t); now["bad-api"] != running["bad-api"] || now[static] != running[static] {
				t.Errorf("containers on the node %v, want %v as before", now, running)
			}
			if after := readTree(t, keptDir); !equalTrees(keptBefore, after) {
				t.Errorf("kept state changed:\nbefore %v\nafter  %v", treeNames(keptBefore), treeNames(after))
			}
			if code, _ := d.terminate(t, 30*time.Second); code != 0 {
				t.Errorf("daemon exit code %d", code)
			}
		})
	}

	// A damaged kept file and one of another cluster (a valid file of
	// node name of another server and CA) beside the node's own.
	damaged := filepath.Join(keptDir, "pods", string(uuid.NewUUID())+".json")
	if err := os.WriteFile(damaged, []byte(`{"format":1,"sha256":"00","record":{"cut short`), 0o600); err != nil {
		t.Fatal(err)
	}
	other := otherClusterFile(t, keptDir, &api, name)
	// Anything left at the end is stopped with this one (the suite's
	// leak check then finds nothing of a failed run).
	d = startDaemon(t, dir, nil, "--kubeconfig", kc, "--stop-pods-on-exit")
	eventually(t, 60*time.Second, "both kept files said and set aside", func() (bool, string) {
		out := d.stderr()
		// Only these two: the suite's earlier node tests may have left
		// kept files of their clusters, which the first daemon set aside.
		damagedAside, _ := filepath.Glob(filepath.Join(keptDir, "aside", filepath.Base(damaged)+".damaged.*"))
		otherAside, _ := filepath.Glob(filepath.Join(keptDir, "aside", filepath.Base(other)+".other-cluster.*"))
		return strings.Contains(out, "kept state "+damaged+" is damaged") &&
			strings.Contains(out, "kept state "+other+" is of another cluster") &&
			strings.Contains(out, "kept aside as "+filepath.Join(keptDir, "aside", filepath.Base(other))+".other-cluster.") &&
			len(damagedAside) == 1 && len(otherAside) == 1, fmt.Sprintf("aside %v %v\n%s", damagedAside, otherAside, out)
	})
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	time.Sleep(3 * time.Second) // a few syncs
	if now := containersOnNode(t); now["bad-api"] != running["bad-api"] || now[static] != running[static] || now["bad-other"] != "" {
		t.Errorf("containers on the node %v, want %v as before (and no bad-other)", now, running)
	}
	if _, err := os.Stat(keptFile); err != nil {
		t.Errorf("the node's own kept file: %v", err)
	}
	for _, f := range []string{damaged, other} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s still in pods/: %v", f, err)
		}
	}
	st, _ := readDaemonStatus()
	t.Logf("daemon's problems: %+v", st.Problems)
}

// containersOnNode are the container IDs of the one-container pods podrun
// lists, by pod name.
func containersOnNode(t *testing.T) map[string]string {
	t.Helper()
	out, code := podrunQuiet(t, "ps", "-a", "-o", "json")
	var list corev1.PodList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("podrun ps -a -o json: exit %d, %v: %s", code, err, out)
	}
	ids := map[string]string{}
	for _, p := range list.Items {
		if len(p.Status.ContainerStatuses) == 1 {
			ids[p.Name] = p.Status.ContainerStatuses[0].ContainerID
		}
	}
	return ids
}

// readTree is every file under dir, by path relative to it, with its
// content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func treeNames(m map[string]string) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	return names
}

// otherClusterFile keeps, in keptDir's pods/, a copy of pod under another
// UID and name as a node of the same name of another cluster kept it, and
// returns its path.
func otherClusterFile(t *testing.T, keptDir string, pod *corev1.Pod, node string) string {
	t.Helper()
	elsewhere := t.TempDir()
	s, err := kept.Open(kept.Options{Dir: elsewhere, Cluster: kept.NewCluster("https://198.51.100.7:6443", []byte("another CA"), node)})
	if err != nil {
		t.Fatal(err)
	}
	p := pod.DeepCopy()
	p.UID, p.Name = uuid.NewUUID(), "bad-other"
	if err := s.Save(kept.New(p, nil)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(elsewhere, "pods", string(p.UID)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(keptDir, "pods", string(p.UID)+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeKubeconfig is a kubeconfig of server with its CA and a client
// certificate and key inline.
func writeKubeconfig(t *testing.T, server string, ca, cert, key []byte) string {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString
	path := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: u, user: {client-certificate-data: %s, client-key-data: %s}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server, b64(ca), b64(cert), b64(key))), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newCA is a CA of its own.
func newCA(t *testing.T, cn string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// readCA reads the cluster's CA (cluster-anchor's pki/ca.crt and ca.key).
func readCA(t *testing.T, certFile, keyFile string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	cb, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cblock, _ := pem.Decode(cb)
	kblock, _ := pem.Decode(kb)
	if cblock == nil || kblock == nil {
		t.Fatalf("%s, %s: not PEM", certFile, keyFile)
	}
	c, err := x509.ParseCertificate(cblock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var key any
	if key, err = x509.ParsePKCS8PrivateKey(kblock.Bytes); err != nil {
		if key, err = x509.ParsePKCS1PrivateKey(kblock.Bytes); err != nil {
			t.Fatalf("%s: %v", keyFile, err)
		}
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		t.Fatalf("%s: a %T", keyFile, key)
	}
	return c, signer
}

// issueClient is node's client certificate (system:node:NAME in
// system:nodes) signed by ca, valid from notBefore to notAfter, and its
// key, both PEM.
func issueClient(t *testing.T, ca *x509.Certificate, caKey crypto.Signer, node string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}
