package ctrd

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/podrun/podrun/engine"
)

// TestRegistryHostsFromHostsDir: a registry with a hosts.toml under
// --hosts-dir is configured by it (its mirror first, then its server);
// one without keeps podrun's defaults.
func TestRegistryHostsFromHostsDir(t *testing.T) {
	empty, dir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docker.io"), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := `server = "http://127.0.0.1:5001"

[host."http://127.0.0.1:5000"]
  capabilities = ["pull", "resolve"]
`
	if err := os.WriteFile(filepath.Join(dir, "docker.io", "hosts.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := registryHosts(context.Background(), engine.PullOptions{HostsDirs: []string{empty, dir}}, wrapped)
	got, err := hosts("docker.io")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Host != "127.0.0.1:5000" || got[0].Scheme != "http" || got[1].Host != "127.0.0.1:5001" {
		var hs []string
		for _, h := range got {
			hs = append(hs, h.Scheme+"://"+h.Host)
		}
		t.Fatalf("docker.io hosts %v, want the mirror 127.0.0.1:5000 then the server 127.0.0.1:5001", hs)
	}
	for _, h := range got {
		if _, ok := h.Client.Transport.(wrappedRT); !ok {
			t.Errorf("%s from hosts.toml: transport %T, not wrapped by the link", h.Host, h.Client.Transport)
		}
	}
	got, err = hosts("quay.io")
	if err != nil || len(got) != 1 || got[0].Host != "quay.io" || got[0].Scheme != "https" {
		t.Errorf("quay.io without a host directory: %+v, %v", got, err)
	}
	if _, ok := got[0].Client.Transport.(wrappedRT); !ok {
		t.Errorf("quay.io: transport %T, not wrapped by the link", got[0].Client.Transport)
	}
	if def, _ := registryHosts(context.Background(), engine.PullOptions{}, wrapped)("docker.io"); len(def) != 1 || def[0].Host != "registry-1.docker.io" {
		t.Errorf("docker.io with no --hosts-dir: %+v", def)
	}
}

// wrappedRT marks a transport registryHosts wrapped.
type wrappedRT struct{ http.RoundTripper }

func wrapped(rt http.RoundTripper) http.RoundTripper { return wrappedRT{rt} }
