package kubenode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// NewClient's two groups reach the API server's paths of their group, with
// the config's user agent, over one HTTP client.
func TestNewClient(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // path -> user agent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.UserAgent()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/nodes/n1":
			_ = json.NewEncoder(w).Encode(corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
		case "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1":
			_ = json.NewEncoder(w).Encode(coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	c, err := NewClient(&rest.Config{Host: srv.URL, UserAgent: "podrun/test", QPS: 5, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n, err := c.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil || n.Name != "n1" {
		t.Errorf("node: %v, %v", n, err)
	}
	if l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n1", metav1.GetOptions{}); err != nil || l.Name != "n1" {
		t.Errorf("lease: %v, %v", l, err)
	}
	// The lease controller's view of it: CoordinationV1 is the client's.
	if l, err := (leaseClientset{client: c}).CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n1", metav1.GetOptions{}); err != nil || l.Name != "n1" {
		t.Errorf("lease through leaseClientset: %v, %v", l, err)
	}
	for _, p := range []string{"/api/v1/nodes/n1", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1"} {
		if seen[p] != "podrun/test" {
			t.Errorf("%s: user agent %q, want podrun/test (seen %v)", p, seen[p], seen)
		}
	}
}

// NewClient refuses what kubernetes.NewForConfig refuses.
func TestNewClientConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		rc   rest.Config
		ok   bool
	}{
		{"defaults", rest.Config{Host: "https://127.0.0.1:6443"}, true},
		{"qps and burst", rest.Config{Host: "https://127.0.0.1:6443", QPS: 5, Burst: 10}, true},
		{"qps without burst", rest.Config{Host: "https://127.0.0.1:6443", QPS: 5}, false},
		{"bad host", rest.Config{Host: "https://[::1"}, false},
		{"ca file missing", rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(&tc.rc)
			if (err == nil) != tc.ok {
				t.Errorf("NewClient: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
