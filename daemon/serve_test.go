package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/run"
)

// TestMakeImagesDir: the default is <root>/images, made root's alone; a
// directory given is made as it is.
func TestMakeImagesDir(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct{ flag, want string }{
		{"", filepath.Join(root, "images")},
		{filepath.Join(root, "air-gap", "images"), filepath.Join(root, "air-gap", "images")},
	} {
		got, err := MakeImagesDir(tt.flag, root)
		if err != nil || got != tt.want {
			t.Fatalf("MakeImagesDir(%q) = %q, %v; want %q", tt.flag, got, err, tt.want)
		}
		if st, err := os.Stat(got); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a directory of mode 0700", got, st, err)
		}
	}
}

// TestServe: while the daemon runs, its endpoints answer on the listener;
// when its context ends, Serve returns and they stop.
func TestServe(t *testing.T) {
	root := t.TempDir()
	h := run.NewHost(run.Config{Root: root, LogDir: t.TempDir()}, run.Deps{Engine: fake.New()}, nil, nil)
	defer h.Close()
	o := Options{ManifestDir: t.TempDir(), Resync: time.Minute, StatusFile: filepath.Join(root, "daemon.json")}
	d := New(h, o, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, nil, l) }()
	url := "http://" + l.Addr().String()
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, resp.Status)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && err != context.Canceled {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when its context ended")
	}
	if resp, err := http.Get(url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("GET /healthz after Serve returned: %s; want no server", resp.Status)
	}
}
