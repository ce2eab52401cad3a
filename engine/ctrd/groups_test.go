package ctrd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/mount"
)

func TestCommonDir(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{[]string{"/var/lib/c/snapshots/3/fs", "/var/lib/c/snapshots/12/fs"}, "/var/lib/c/snapshots"},
		{[]string{"/var/lib/c/snapshots/3/fs", "/var/lib/c/snapshots/3/fsx"}, "/var/lib/c/snapshots/3"},
		{[]string{"/a/x", "/b/y"}, ""},
		{[]string{"/a/b/c"}, "/a/b"},
	} {
		if got := commonDir(tc.paths); got != tc.want {
			t.Errorf("commonDir(%q) = %q, want %q", tc.paths, got, tc.want)
		}
	}
}

// TestMountReadOnlyManyLayers mounts an overlay of more layers than one
// page of mount options can name (they are given relative to their common
// directory) in a private mount namespace, reads through it, and leaves
// no mount behind. Needs root.
func TestMountReadOnlyManyLayers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	var lower []string
	for i := range 60 {
		dir := filepath.Join(base, fmt.Sprintf("snapshot-with-a-rather-long-name-%02d", i), "fs")
		if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		lower = append(lower, dir)
	}
	if err := os.WriteFile(filepath.Join(lower[59], "etc", "group"), []byte("bottom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lower[1], "etc", "group"), []byte("top\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mount.Mount{Type: "overlay", Source: "overlay", Options: []string{
		"index=off", "workdir=" + filepath.Join(base, "work"), "upperdir=" + lower[0], "lowerdir=" + strings.Join(lower[1:], ":")}}
	if !pageLimit(lower, nil) {
		t.Fatalf("%d layers fit in a page: the test does not test compaction", len(lower))
	}
	before, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var target string
	err = inPrivateMountNS(func(dir string) error {
		target = dir
		if err := mountReadOnly([]mount.Mount{m}, dir); err != nil {
			return err
		}
		var err error
		got, err = os.ReadFile(filepath.Join(dir, "etc", "group"))
		return err
	})
	if err != nil || string(got) != "top\n" {
		t.Fatalf("read %q, %v; want the top layer's file", got, err)
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	// Only the mounts on the target are compared: the tests of other
	// packages (go test runs them side by side) mount and unmount in this
	// namespace meanwhile.
	if was, is := mountsOn(before, target), mountsOn(info, target); !slices.Equal(was, is) {
		t.Errorf("a mount on %s reached this process's namespace: %q, before %q", target, is, was)
	}
}

// mountsOn are the lines of a mountinfo whose mount point (the fifth
// field) is dir.
func mountsOn(mountinfo []byte, dir string) []string {
	var on []string
	for line := range strings.Lines(string(mountinfo)) {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			on = append(on, line)
		}
	}
	return on
}
