package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

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

// TestPodHostIPs: a node's pods' host IPs are those of its Node as the
// agent last read or sent it, else those it registers with.
func TestPodHostIPs(t *testing.T) {
	var local []net.IP
	var localErr error
	p := &podHostIPs{local: func() ([]net.IP, error) { return local, localErr }}
	check := func(what string, want ...string) {
		t.Helper()
		var got []string
		for _, ip := range p.get() {
			got = append(got, ip.String())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: host IPs %v, want %v", what, got, want)
		}
	}
	local = []net.IP{net.ParseIP("127.0.0.1")}
	check("no agent yet: the registered Node's", "127.0.0.1")
	local = []net.IP{net.ParseIP("192.0.2.2"), net.ParseIP("192.0.2.3"), net.ParseIP("fd00::2")}
	check("several local addresses: the first and the first of the other family", "192.0.2.2", "fd00::2")

	facts := kubenode.Facts{Name: "vm", InternalIPs: []string{"10.0.0.5"}, Hostname: "vm"}
	a := &kubenode.Agent{Client: fake.NewClientset(), Clock: clocktesting.NewFakeClock(time.Now()), Log: slog.New(slog.DiscardHandler),
		Facts:  func(context.Context) (kubenode.Facts, error) { return facts, nil },
		Health: func(context.Context) kubenode.Health { return kubenode.Health{} }}
	p.agent.Store(a)
	check("agent without a Node yet (API server away): the registered Node's", "192.0.2.2", "fd00::2")
	if _, err := a.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("the Node's", "10.0.0.5")
	local, localErr = nil, errors.New("no address")
	check("the Node's, whatever the host's", "10.0.0.5")

	p.agent.Store(nil)
	check("none known")
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
