package kept

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	clusterA = Cluster{Server: "https://10.0.0.1:6443", CA: strings.Repeat("a", 64), Node: "vm"}
	clusterB = Cluster{Server: "https://10.0.0.2:6443", CA: strings.Repeat("b", 64), Node: "vm"}
)

func testPod(uid, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid), ResourceVersion: "100"},
		Spec:       corev1.PodSpec{NodeName: "vm", Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// caPEM is a self-signed CA certificate in PEM.
func caPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true,
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<31, 0), BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestNewCluster(t *testing.T) {
	ca1, ca2 := caPEM(t, "kubernetes"), caPEM(t, "kubernetes")
	base := NewCluster("https://10.0.0.1:6443", ca1, "vm")
	for _, tc := range []struct {
		name   string
		server string
		ca     []byte
		node   string
		same   bool
	}{
		{"the same", "https://10.0.0.1:6443", ca1, "vm", true},
		{"trailing slash", "https://10.0.0.1:6443/", ca1, "vm", true},
		{"upper-case host and scheme", "HTTPS://10.0.0.1:6443", ca1, "vm", true},
		{"the bundle re-encoded", "https://10.0.0.1:6443", append(append([]byte("# the cluster's CA\n\n"), ca1...), '\n'), "vm", true},
		{"another CA of the same name", "https://10.0.0.1:6443", ca2, "vm", false},
		{"another server", "https://10.0.0.2:6443", ca1, "vm", false},
		{"another node name", "https://10.0.0.1:6443", ca1, "vm2", false},
		{"no CA (the system's)", "https://10.0.0.1:6443", nil, "vm", false},
		{"a bundle with one more CA", "https://10.0.0.1:6443", append(slices.Clone(ca1), ca2...), "vm", false},
	} {
		if got := NewCluster(tc.server, tc.ca, tc.node); (got == base) != tc.same {
			t.Errorf("%s: %+v vs %+v: same = %v, want %v", tc.name, got, base, got == base, tc.same)
		}
	}
	if c := NewCluster("https://x", []byte("not PEM"), "n"); c.CA == "" || c.CA == NewCluster("https://x", []byte("not PEM either"), "n").CA {
		t.Errorf("a bundle without certificates is hashed on its bytes: %+v", c)
	}
	if got := base.String(); !strings.Contains(got, `node "vm" of https://10.0.0.1:6443 (CA sha256 `) {
		t.Errorf("String() = %q", got)
	}
	if got := NewCluster("https://x", nil, "n").String(); !strings.Contains(got, "(no CA in its kubeconfig)") {
		t.Errorf("String() = %q", got)
	}
}

// TestDecode: each way a file can be wrong is refused with its reason.
func TestDecode(t *testing.T) {
	good, err := encode(clusterA, Pod{Pod: testPod("u1", "web")})
	if err != nil {
		t.Fatal(err)
	}
	var env envelope
	if err := json.Unmarshal(good, &env); err != nil {
		t.Fatal(err)
	}
	reencode := func(f func(*envelope)) []byte {
		e := env
		e.Record = slices.Clone(env.Record)
		f(&e)
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		uid    types.UID
		this   Cluster
		reason string // "" for good
		msg    string
	}{
		{"good", good, "u1", clusterA, "", ""},
		{"empty", nil, "u1", clusterA, reasonDamaged, "unexpected end of JSON input"},
		{"cut short", good[:len(good)/2], "u1", clusterA, reasonDamaged, "is damaged"},
		{"not JSON", []byte("pod: web\n"), "u1", clusterA, reasonDamaged, "is damaged"},
		{"a newer format", reencode(func(e *envelope) { e.Format = Format + 1 }), "u1", clusterA, reasonFormat, "of a newer podrun"},
		{"no format", reencode(func(e *envelope) { e.Format = 0 }), "u1", clusterA, reasonDamaged, "format 0"},
		{"a flipped byte", reencode(func(e *envelope) { e.Record = bytes.Replace(e.Record, []byte("busybox:1"), []byte("busybox:2"), 1) }), "u1", clusterA, reasonDamaged, "checksum does not match"},
		{"the file of another UID", good, "u2", clusterA, reasonDamaged, "no pod of UID u2"},
		{"another cluster", good, "u1", clusterB, reasonOtherCluster, "is of another cluster: kept for node \"vm\" of https://10.0.0.1:6443 (CA sha256 aaaaaaaaaaaa), and this is node \"vm\" of https://10.0.0.2:6443"},
		{"another node name", good, "u1", Cluster{Server: clusterA.Server, CA: clusterA.CA, Node: "other"}, reasonOtherCluster, "another cluster"},
	} {
		p, bad := decode(tc.data, tc.uid, tc.this)
		switch {
		case tc.reason == "" && bad != nil:
			t.Errorf("%s: refused: %+v", tc.name, bad)
		case tc.reason == "" && (p.Pod == nil || p.Pod.Name != "web"):
			t.Errorf("%s: decoded %+v", tc.name, p)
		case tc.reason != "" && bad == nil:
			t.Errorf("%s: not refused", tc.name)
		case tc.reason != "" && (bad.reason != tc.reason || !strings.Contains(bad.msg, tc.msg)):
			t.Errorf("%s: refused as %s %q, want %s with %q", tc.name, bad.reason, bad.msg, tc.reason, tc.msg)
		}
	}
}

func TestStale(t *testing.T) {
	live := func(uids ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, u := range uids {
			out = append(out, testPod(u, "p-"+u))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		kept []types.UID
		live []*corev1.Pod
		want []types.UID
	}{
		{"nothing kept", nil, live("a"), nil},
		{"all still there", []types.UID{"a", "b"}, live("b", "a"), nil},
		{"one deleted meanwhile", []types.UID{"c", "a", "b"}, live("a"), []types.UID{"b", "c"}},
		{"the API has none (all evicted or deleted)", []types.UID{"a", "b"}, nil, []types.UID{"a", "b"}},
		{"recreated under the same name: a new UID", []types.UID{"a"}, live("a2"), []types.UID{"a"}},
	} {
		if got := stale(tc.kept, tc.live); !slices.Equal(got, tc.want) {
			t.Errorf("%s: stale = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewest(t *testing.T) {
	at := func(uid, name string, sec int64) Pod {
		return Pod{Pod: testPod(uid, name), Saved: time.Unix(sec, 0)}
	}
	uids := func(ps []Pod) (out []string) {
		for _, p := range ps {
			out = append(out, string(p.Pod.UID))
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		pods              []Pod
		stand, superseded []string
	}{
		{"none", nil, nil, nil},
		{"distinct, sorted by name", []Pod{at("2", "web", 1), at("1", "api", 2)}, []string{"1", "2"}, nil},
		{"the later copy stands", []Pod{at("old", "web", 1), at("new", "web", 5)}, []string{"new"}, []string{"old"}},
		{"whatever the order", []Pod{at("new", "web", 5), at("old", "web", 1), at("older", "web", 0)}, []string{"new"}, []string{"old", "older"}},
	} {
		stand, sup := newest(tc.pods)
		if !slices.Equal(uids(stand), tc.stand) || !slices.Equal(uids(sup), tc.superseded) {
			t.Errorf("%s: stand %v superseded %v, want %v %v", tc.name, uids(stand), uids(sup), tc.stand, tc.superseded)
		}
	}
}

// TestEssence: what a reboot needs is a write, a status update is not.
func TestEssence(t *testing.T) {
	base := Pod{Pod: testPod("u1", "web"), Secrets: map[string]*corev1.Secret{"s": {Data: map[string][]byte{"k": []byte("v")}}}}
	sum0, err := essence(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		f     func(p *Pod)
		write bool
	}{
		{"nothing", func(p *Pod) {}, false},
		{"resourceVersion", func(p *Pod) { p.Pod.ResourceVersion = "101" }, false},
		{"managedFields", func(p *Pod) { p.Pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}} }, false},
		{"a condition", func(p *Pod) {
			p.Pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, false},
		{"a restart count", func(p *Pod) {
			p.Pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 3}}
		}, false},
		{"the saved time", func(p *Pod) { p.Saved = time.Unix(5, 0) }, false},
		{"the phase (a pod that finished is not run again)", func(p *Pod) { p.Pod.Status.Phase = corev1.PodSucceeded }, true},
		{"the spec", func(p *Pod) { p.Pod.Spec.Containers[0].Image = "busybox:2" }, true},
		{"a label", func(p *Pod) { p.Pod.Labels = map[string]string{"a": "b"} }, true},
		{"being deleted", func(p *Pod) { now := metav1.Now(); p.Pod.DeletionTimestamp = &now }, true},
		{"a Secret's data", func(p *Pod) { p.Secrets = map[string]*corev1.Secret{"s": {Data: map[string][]byte{"k": []byte("w")}}} }, true},
		{"a ConfigMap", func(p *Pod) { p.ConfigMaps = map[string]*corev1.ConfigMap{"c": {}} }, true},
		{"a token refreshed", func(p *Pod) {
			p.Tokens = map[string]*authenticationv1.TokenRequest{"v/token": {Status: authenticationv1.TokenRequestStatus{Token: "t2"}}}
		}, true},
	} {
		p := base
		p.Pod = base.Pod.DeepCopy()
		tc.f(&p)
		sum, err := essence(p)
		if err != nil {
			t.Fatal(err)
		}
		if (sum != sum0) != tc.write {
			t.Errorf("%s: a write = %v, want %v", tc.name, sum != sum0, tc.write)
		}
	}
	if base.Pod.ResourceVersion != "100" || base.Pod.Status.Phase != corev1.PodRunning {
		t.Errorf("essence changed the pod: %+v", base.Pod)
	}
}

func TestFileName(t *testing.T) {
	for _, tc := range []struct {
		uid  types.UID
		want string // "" for refused
	}{
		{"0f9f1a3c-7c1e-4c38-9d0e-1a2b3c4d5e6f", "0f9f1a3c-7c1e-4c38-9d0e-1a2b3c4d5e6f.json"},
		{"", ""},
		{"../x", ""},
		{"a/b", ""},
		{".hidden", ""},
		{types.UID(strings.Repeat("a", 129)), ""},
		{"with space", ""},
	} {
		got, err := fileName(tc.uid)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("fileName(%q) = %q, %v; want %q", tc.uid, got, err, tc.want)
		}
		if tc.want != "" && uidOf(got) != tc.uid {
			t.Errorf("uidOf(%q) = %q", got, uidOf(got))
		}
	}
	for _, name := range []string{"x.yaml", ".tmp-u1.json.0123", "u1.json.damaged.20261129T000000Z", ".json"} {
		if uid := uidOf(name); uid != "" {
			t.Errorf("uidOf(%q) = %q, want none", name, uid)
		}
	}
}
