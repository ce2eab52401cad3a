package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/run"
)

// nestedDir makes base/a/b/leaf (base a t.TempDir: root's, or the test's
// user's, 0700 under /tmp, which is sticky) and returns a and leaf.
func nestedDir(t *testing.T) (a, leaf string) {
	t.Helper()
	a = filepath.Join(t.TempDir(), "a")
	leaf = filepath.Join(a, "b", "leaf")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	return a, leaf
}

// TestScanChecksEveryAncestor: as sshd's StrictModes, every directory
// from / down to the manifest directory must be trusted: one writable by
// its group (anyone in it could swap what is below) or a symlink refuses
// the whole directory, saying which; /tmp's sticky bit is trusted (in it
// only an entry's owner can rename or remove it).
func TestScanChecksEveryAncestor(t *testing.T) {
	a, dir := nestedDir(t)
	writeManifest(t, dir, "a.yaml", "a", 0o644)
	s := NewSources(dir, "")
	if wants, _, problems := s.Scan(context.Background(), nil); len(wants) != 1 || len(problems) != 0 {
		t.Fatalf("a trusted directory below /tmp: wants %v, problems %v", wants, problems)
	}
	if err := os.Chmod(a, 0o775); err != nil {
		t.Fatal(err)
	}
	_, broken, problems := s.Scan(context.Background(), nil)
	if msg := problemsOf(problems, dir); !strings.Contains(msg, "not trusted") || !strings.Contains(msg, a+" is writable by its group or by others (mode 0775)") {
		t.Errorf("a group-writable ancestor: problems %+v", problems)
	}
	if !broken[filepath.Join(dir, "a.yaml")] {
		t.Errorf("a group-writable ancestor: the file is not kept as last read")
	}
	if err := unix.Chmod(a, 0o1777); err != nil { // sticky and world-writable, as /tmp
		t.Fatal(err)
	}
	if _, _, problems := s.Scan(context.Background(), nil); len(problems) != 0 {
		t.Errorf("a sticky world-writable ancestor of root's: %+v", problems)
	}
	if err := os.Chmod(a, 0o755); err != nil {
		t.Fatal(err)
	}
	// The same directory through a symlink in its path.
	link := filepath.Join(filepath.Dir(a), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	via := NewSources(filepath.Join(link, "b", "leaf"), "")
	if _, _, problems := via.Scan(context.Background(), nil); !strings.Contains(problemsOf(problems, via.Dir), link+" is a symlink") {
		t.Errorf("a symlink in the path: %+v", problems)
	}
}

// TestImportImagesChecksTheDirectory: the images directory is checked as
// the manifest directory is, ancestors and all: one others may write is
// refused whole, and nothing in it is imported.
func TestImportImagesChecksTheDirectory(t *testing.T) {
	a, images := nestedDir(t)
	if err := os.WriteFile(filepath.Join(images, "a.tar"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(images, "a.tar"), old, old); err != nil {
		t.Fatal(err)
	}
	e := fake.New()
	imported := 0
	e.ImportFunc = func(r io.Reader) ([]engine.Image, error) {
		imported++
		return []engine.Image{{Ref: "podrun.test/a:1"}}, nil
	}
	h := run.NewHost(run.Config{Root: t.TempDir(), LogDir: t.TempDir()}, run.Deps{Engine: e}, nil, nil)
	defer h.Close()
	d := New(h, Options{ManifestDir: t.TempDir(), ImagesDir: images, Settle: time.Second}, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics())
	for _, mode := range []os.FileMode{0o777, 0o755} {
		if err := os.Chmod(a, mode); err != nil {
			t.Fatal(err)
		}
		problems := d.importImages(context.Background())
		if mode == 0o777 && (imported != 0 || len(problems) != 1 || !strings.Contains(problems[0].Msg, a+" is writable")) {
			t.Errorf("a world-writable ancestor: %d imported, problems %+v", imported, problems)
		}
		if mode == 0o755 && (imported != 1 || len(problems) != 0) {
			t.Errorf("once trusted: %d imported, problems %+v", imported, problems)
		}
	}
}

// TestCheckStateDirs: --root, --run-dir and their io/ and containerd/
// children must each be a directory of root's (or the daemon's user's)
// that nobody else may write, and not a symlink; one missing is made later.
func TestCheckStateDirs(t *testing.T) {
	base := t.TempDir()
	good, missing := filepath.Join(base, "good"), filepath.Join(base, "missing")
	if err := os.Mkdir(good, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateDirs(good, missing); err != nil {
		t.Errorf("a good and a missing directory: %v", err)
	}
	writable := filepath.Join(base, "writable")
	if err := os.Mkdir(writable, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(writable, 0o1777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{writable: "is writable by its group or by others (mode 1777)", link: "is a symlink", file: "is not a directory"} {
		if err := CheckStateDirs(good, path); err == nil || !strings.Contains(err.Error(), path+" "+want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := CheckStateDirs(other); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("a directory of another user's: %v", err)
		}
	}
}
