package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzSubPath: whatever the subPath, what openSubPath opens (or creates)
// lies inside the volume, which holds symlinks pointing out of it.
func FuzzSubPath(f *testing.F) {
	for _, s := range []string{"a/b", "escape", "escape/x", "up/../..", "link-in/new", "a//b/./c", "/abs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sub string) {
		if sub == "" || strings.ContainsRune(sub, 0) || strings.HasPrefix(sub, "/") || len(sub) > 256 {
			return // the manifest's validation refuses these before any volume is touched
		}
		// A volume of its own per input (t.TempDir is removed after each; a
		// fuzz-wide one outlives the workers stopped at -fuzztime).
		base := t.TempDir()
		vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "outside")
		for _, d := range []string{vol, outside, filepath.Join(vol, "inside")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for link, target := range map[string]string{"escape": outside, "up": "../..", "link-in": "inside", "abs": "/"} {
			if err := os.Symlink(target, filepath.Join(vol, link)); err != nil {
				t.Fatal(err)
			}
		}
		h, err := openSubPath(vol, sub)
		if err != nil {
			return
		}
		defer h.Close()
		real, err := os.Readlink(procFD(int(h.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		if real != vol && !strings.HasPrefix(real, vol+"/") {
			t.Fatalf("subPath %q opened %s, outside the volume %s", sub, real, vol)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Fatalf("subPath %q created %v outside the volume", sub, entries)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(h.Fd()), &st); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzAtomicWrite: whatever a payload's paths, the writer writes below its
// directory only, or refuses.
func FuzzAtomicWrite(f *testing.F) {
	for _, p := range []string{"k", "a/b", "../x", "..data", "a/../../x", "/abs", "..2026"} {
		f.Add(p, []byte("v"))
	}
	f.Fuzz(func(t *testing.T, path string, data []byte) {
		if len(path) > 200 {
			return
		}
		base := t.TempDir()
		dir := filepath.Join(base, "vol")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = AtomicWrite(dir, map[string]FileProjection{path: {Data: data, Mode: 0o644}}, nil)
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "vol" {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("payload path %q wrote %v beside the volume", path, names)
		}
	})
}
