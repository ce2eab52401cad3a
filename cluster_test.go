package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/podrun/podrun/kubenode"
	"github.com/podrun/podrun/run"
)

// TestKeptState: the kept state opens under the root for the kubeconfig's
// cluster; a kept directory someone else than root may write is a problem
// to show, and the node runs without kept state (never a refusal to
// start).
func TestKeptState(t *testing.T) {
	rc := &rest.Config{Host: "https://192.0.2.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA")}}
	root := t.TempDir()
	k, problems := keptState(run.Config{Root: root}, rc, "vm")
	if k == nil || len(problems) != 0 {
		t.Fatalf("keptState: %v %q", k, problems)
	}
	if st, err := os.Stat(filepath.Join(root, "kept", "pods")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("kept/pods: %v %v", st, err)
	}
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "kept"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(bad, "kept"), 0o777); err != nil {
		t.Fatal(err)
	}
	k, problems = keptState(run.Config{Root: bad}, rc, "vm")
	if k != nil || len(problems) != 1 || !strings.Contains(problems[0], "writable by its group or by others") ||
		!strings.Contains(problems[0], "not kept on the device") {
		t.Errorf("keptState of a 0777 kept directory: %v %q", k, problems)
	}
}

func TestClientConfigs(t *testing.T) {
	rc := &rest.Config{Host: "https://192.0.2.1:6443", UserAgent: "podrun/test"}
	hb, pods := clientConfigs(rc)
	for _, c := range []struct {
		name    string
		got     *rest.Config
		qps     float32
		burst   int
		timeout time.Duration
	}{
		{"heartbeat: the update period, client-go's rate limit", hb, 0, 0, kubenode.StatusUpdateFrequency},
		{"pods: the kubelet's rate limit, no timeout (watches)", pods, kubenode.APIQPS, kubenode.APIBurst, 0},
		{"the kubeconfig's: unchanged", rc, 0, 0, 0},
	} {
		if c.got.QPS != c.qps || c.got.Burst != c.burst || c.got.Timeout != c.timeout || c.got.Host != rc.Host || c.got.UserAgent != rc.UserAgent {
			t.Errorf("%s: QPS %v burst %d timeout %v host %s agent %s; want %v %d %v", c.name, c.got.QPS, c.got.Burst, c.got.Timeout, c.got.Host, c.got.UserAgent, c.qps, c.burst, c.timeout)
		}
	}
}
