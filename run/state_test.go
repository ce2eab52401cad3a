package run

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/podrun/podrun/engine/fake"
)

// TestPodsSkipsDirectoriesBeingRemoved: a pod directory renamed for its
// removal (what a kill -9 leaves, with its record still inside) is no pod:
// listing never shows it, so nothing acts on it as one.
func TestPodsSkipsDirectoriesBeingRemoved(t *testing.T) {
	root := t.TempDir()
	gone := filepath.Join(root, "pods", ".removing-"+testUID)
	if err := os.MkdirAll(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gone, stateFile), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := NewHost(Config{Root: root, LogDir: t.TempDir()}, Deps{Engine: fake.New()}, nil, nil)
	defer h.Close()
	if uids, err := h.stateUIDs(); err != nil || len(uids) != 0 {
		t.Errorf("state uids %v, %v; want none", uids, err)
	}
}
