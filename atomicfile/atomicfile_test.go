package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// The temporary file is made beside the file, never in $TMPDIR even when
// that is on the same filesystem: $TMPDIR's directory is not touched at all
// (renameio's own choice probes it with files of its own, changing its mtime).
func TestWritesBesideTheFileNotInTMPDIR(t *testing.T) {
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	dir := filepath.Join(base, "state")
	for _, d := range []string{tmp, dir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	before, err := os.Stat(tmp)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pod.json")
	for _, data := range []string{"one", "two"} { // made, then replaced
		if err := WriteFile(path, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	after, err := os.Stat(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("$TMPDIR was written to (mtime %v, was %v)", after.ModTime(), before.ModTime())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only pod.json: %v", len(entries), entries)
	}
}

// The mode is the one asked for, whatever the umask.
func TestModeIsExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(path, nil, 0o664); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o664 {
		t.Errorf("mode %v, want 0664", st.Mode().Perm())
	}
}
