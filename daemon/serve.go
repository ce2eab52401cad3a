// What `podrun daemon` does around Run: the directories it starts on, and
// its endpoints served while it runs.

package daemon

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// StateDirs are the directories the daemon keeps its state and its
// containerd in, under --root and --run-dir, for CheckStateDirs.
func StateDirs(root, runDir string) []string {
	return []string{root, filepath.Join(root, "containerd"), runDir, filepath.Join(runDir, "io"), filepath.Join(runDir, "containerd")}
}

// MakeImagesDir returns the image archive directory, dir or by default
// <root>/images, made (root's alone) when missing.
func MakeImagesDir(dir, root string) (string, error) {
	if dir == "" {
		dir = filepath.Join(root, "images")
	}
	return dir, os.MkdirAll(dir, 0o700)
}

// Serve runs the daemon (Run) with its probes counted in its metrics and,
// when l is not nil, /healthz, /readyz and /metrics served on l until it
// returns.
func (d *Daemon) Serve(ctx context.Context, hup <-chan os.Signal, l net.Listener) error {
	d.h.ObserveProbes(d.metrics.ObserveProbe)
	if l != nil {
		srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
	}
	return d.Run(ctx, hup)
}
