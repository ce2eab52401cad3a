package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// tokensManifest: a ConfigMap and a pod naming the node that mounts it,
// with the default service account (the API server adds its
// kube-api-access-* volume: token, ca.crt, namespace) and a second
// projected token for another audience.
const tokensManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: tk-config}
data: {level: %[3]s}
---
apiVersion: v1
kind: Pod
metadata: {name: tk-pod, labels: {test: tokens}}
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts:
    - {name: config, mountPath: /etc/cm}
    - {name: vault, mountPath: /var/run/vault}
  volumes:
  - name: config
    configMap: {name: tk-config}
  - name: vault
    projected:
      defaultMode: 0440
      sources:
      - serviceAccountToken: {audience: podrun-test, expirationSeconds: 600, path: token}
`

// TestNodeAPIPodTokens: a pod bound to the podrun node gets its
// service account token (a TokenRequest bound to the pod, as the
// kubelet's), ca.crt and namespace in its kube-api-access volume and a
// token of another audience in its own projected volume; the token
// authenticates as the service account, for this pod; a changed ConfigMap
// reaches the running pod's volume without a restart of its container.
func TestNodeAPIPodTokens(t *testing.T) {
	cp := startControlPlane(t)
	name := H.Node
	kc := cp.nodeKubeconfig(t, name)
	image := H.ImportImage(t, testimage.Config{Ref: "podrun.test/api-web:1"})
	startDaemon(t, t.TempDir(), nil, "--kubeconfig", kc)
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	eventually(t, 60*time.Second, "the default ServiceAccount", func() (bool, string) {
		out, err := cp.kubectl("", "get", "serviceaccount", "default")
		return err == nil, out
	})
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	apply := func(level string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(fmt.Sprintf(tokensManifest, name, image, level)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := cp.kubectl("", "apply", "-f", file); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	applied := time.Now()
	apply("one")
	t.Cleanup(func() {
		if out, err := cp.kubectl("", "delete", "--grace-period=2", "-f", file); err != nil {
			t.Errorf("kubectl delete: %v\n%s", err, out)
		}
		eventually(t, 60*time.Second, "tk-pod gone from the node", func() (bool, string) {
			return !onNode(t, "tk-pod"), "still listed"
		})
	})
	pods := cp.waitAPIPods(t, "test=tokens", 1, 120*time.Second)
	pod := pods[0]
	t.Logf("pod Running with its tokens %v after kubectl apply", time.Since(applied).Round(time.Millisecond))
	checkAPIPodStatus(t, &pod, name)

	cat := func(path string) string {
		t.Helper()
		out, code := podrunQuiet(t, "exec", "tk-pod", "--", "cat", path)
		if code != 0 {
			t.Fatalf("podrun exec tk-pod -- cat %s: exit %d: %s", path, code, out)
		}
		return out
	}
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	if ns := cat(sa + "namespace"); ns != "default" {
		t.Errorf("namespace %q", ns)
	}
	var root corev1.ConfigMap
	if err := cp.get(t, &root, "configmap", "kube-root-ca.crt"); err != nil {
		t.Fatal(err)
	}
	if ca := cat(sa + "ca.crt"); ca != root.Data["ca.crt"] || !strings.Contains(ca, "BEGIN CERTIFICATE") {
		t.Errorf("ca.crt %q, want kube-root-ca.crt's", ca)
	}
	if out, code := podrunQuiet(t, "exec", "tk-pod", "--", "stat", "-L", "-c", "%a", sa+"token", "/var/run/vault/token"); code != 0 || out != "644\n440\n" {
		t.Errorf("token modes (exit %d) %q, want 644 (kube-api-access defaultMode) and 440", code, out)
	}

	// Each token: a JWT bound to this pod, for its audience.
	token := cat(sa + "token")
	checkTokenClaims(t, token, pod, "https://kubernetes.default.svc")
	checkTokenClaims(t, cat("/var/run/vault/token"), pod, "podrun-test")

	// It authenticates as the service account, for this pod.
	review := filepath.Join(t.TempDir(), "review.json")
	b, _ := json.Marshal(authenticationv1.TokenReview{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"},
		Spec: authenticationv1.TokenReviewSpec{Token: token}})
	if err := os.WriteFile(review, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cp.kubectl("", "create", "-f", review, "-o", "json")
	var tr authenticationv1.TokenReview
	if err != nil || json.Unmarshal([]byte(out), &tr) != nil {
		t.Fatalf("TokenReview: %v\n%s", err, out)
	}
	u := tr.Status.User
	if !tr.Status.Authenticated || u.Username != "system:serviceaccount:default:default" ||
		strings.Join(u.Extra["authentication.kubernetes.io/pod-name"], ",") != "tk-pod" ||
		strings.Join(u.Extra["authentication.kubernetes.io/pod-uid"], ",") != string(pod.UID) {
		t.Errorf("TokenReview: %+v", tr.Status)
	}
	t.Logf("TokenReview: authenticated %t as %s, extra %v", tr.Status.Authenticated, u.Username, u.Extra)

	// What the node costs the API server at steady state: its objects are
	// watched, not read again (the TTL strategy GETs each once a minute).
	logRequestRates(t, cp, time.Minute)

	// A changed ConfigMap reaches the running pod's volume (the node
	// watches it; the kubelet writes it at the pod's next sync, within
	// its 1 min sync period); the container is not restarted.
	if got := cat("/etc/cm/level"); got != "one" {
		t.Errorf("level %q, want one", got)
	}
	changed := time.Now()
	apply("two")
	eventually(t, 3*time.Minute, "the changed ConfigMap in the pod's volume", func() (bool, string) {
		got, _ := podrunQuiet(t, "exec", "tk-pod", "--", "cat", "/etc/cm/level")
		return got == "two", got
	})
	t.Logf("the changed ConfigMap reached the volume %v after kubectl apply", time.Since(changed).Round(time.Millisecond))
	after := cp.waitAPIPods(t, "test=tokens", 1, 30*time.Second)
	checkNotRestarted(t, pods, after, false)
}

// checkTokenClaims decodes a JWT's payload (not its signature: the
// TokenReview checks that) and checks it names the pod and the audience.
func checkTokenClaims(t *testing.T, jwt string, pod corev1.Pod, aud string) {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Aud []string `json:"aud"`
		Sub string   `json:"sub"`
		Exp int64    `json:"exp"`
		Iat int64    `json:"iat"`
		K8s struct {
			Namespace string `json:"namespace"`
			Node      struct{ Name string }
			Pod       struct{ Name, UID string }
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("claims %s: %v", payload, err)
	}
	if strings.Join(claims.Aud, ",") != aud || claims.Sub != "system:serviceaccount:default:default" ||
		claims.K8s.Pod.Name != pod.Name || claims.K8s.Pod.UID != string(pod.UID) || claims.K8s.Namespace != "default" {
		t.Errorf("claims %s, want aud %s and pod %s %s", payload, aud, pod.Name, pod.UID)
	}
	t.Logf("token for %v: pod %s, node %q, valid %v", claims.Aud, claims.K8s.Pod.Name, claims.K8s.Node.Name, time.Duration(claims.Exp-claims.Iat)*time.Second)
}

// logRequestRates logs the requests the API server served during d, by
// verb and resource (its apiserver_request_total): every client's (the
// controller manager's and scheduler's too), but only the node reads
// ConfigMaps and Secrets by name.
func logRequestRates(t *testing.T, cp *controlPlane, d time.Duration) {
	t.Helper()
	counts := func() map[string]float64 {
		out, err := cp.kubectl("", "get", "--raw", "/metrics")
		if err != nil {
			t.Logf("the API server's metrics: %v", err)
			return nil
		}
		m := map[string]float64{}
		for l := range strings.Lines(out) {
			labels, value, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "apiserver_request_total{"), "} ")
			if !ok || !strings.HasPrefix(l, "apiserver_request_total{") {
				continue
			}
			var verb, resource, sub string
			for kv := range strings.SplitSeq(labels, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch v = strings.Trim(v, `"`); k {
				case "verb":
					verb = v
				case "resource":
					resource = v
				case "subresource":
					sub = v
				}
			}
			if sub != "" {
				resource += "/" + sub
			}
			var n float64
			if _, err := fmt.Sscan(value, &n); err == nil {
				m[verb+" "+resource] += n
			}
		}
		return m
	}
	before := counts()
	time.Sleep(d)
	after := counts()
	var lines []string
	for k, n := range after {
		if delta := n - before[k]; delta > 0 {
			lines = append(lines, fmt.Sprintf("%-40s %4.0f", k, delta))
		}
	}
	sort.Strings(lines)
	t.Logf("the API server's requests in %v at steady state (apiserver_request_total, every client), by verb and resource:\n%s", d, strings.Join(lines, "\n"))
}
