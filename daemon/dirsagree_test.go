package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/manifest"
)

// TestValidateDirAgreesWithDaemon: `podrun validate DIR` (manifest.Load)
// and the daemon read the same files of a directory: regular files of a
// manifest's name, not a FIFO (which would block), a symlink or an
// editor's temporary file.
func TestValidateDirAgreesWithDaemon(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	pod := func(name string) []byte {
		return fmt.Appendf(nil, "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: c, image: busybox:1}]\n", name)
	}
	for name, body := range map[string][]byte{"a.yaml": pod("a"), "#b.yaml": pod("b"), "c.yaml~": pod("c"), "d.yml": pod("d"), ".e.yaml": pod("e")} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "f.yaml"), pod("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f.yaml"), filepath.Join(dir, "f.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "g.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	wants, _, problems := NewSources(dir, "").Scan(context.Background(), nil)
	if len(problems) > 0 {
		t.Fatalf("daemon: %v", problems)
	}
	var daemonPods []string
	for key := range wants {
		daemonPods = append(daemonPods, key)
	}
	slices.Sort(daemonPods)
	done := make(chan struct{})
	var set *manifest.Set
	var err error
	go func() { defer close(done); set, err = manifest.Options{}.Load([]string{dir}, nil) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Load of the directory is blocked (on its FIFO)")
	}
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var loaded []string
	for _, p := range set.Pods {
		loaded = append(loaded, p.Key())
	}
	if !slices.Equal(loaded, daemonPods) || !slices.Equal(loaded, []string{"default/a", "default/d"}) {
		t.Errorf("validate DIR read %v, the daemon %v; want default/a, default/d both", loaded, daemonPods)
	}
}
