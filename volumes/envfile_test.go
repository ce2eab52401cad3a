package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadEnvFile: KEY=VALUE lines; a missing file is os.ErrNotExist; a
// symlink out of the volume, a directory, a FIFO, a device node and a file
// over the bound are refused.
func TestReadEnvFile(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.env")
	for name, data := range map[string]string{
		"app.env":     "# config\nMODE=fast\n\nURL=http://x/?a=b\n",
		"bad.env":     "NOT A LINE\n",
		"outside.env": "",
		"big.env":     "K=" + strings.Repeat("v", MaxEnvFile) + "\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("SECRET=host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "outside.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "outside.env")); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEnvFile(root, "app.env")
	if err != nil || got["MODE"] != "fast" || got["URL"] != "http://x/?a=b" || len(got) != 2 {
		t.Errorf("app.env: %v, %v", got, err)
	}
	if _, err := ReadEnvFile(root, "missing.env"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing.env: %v, want ErrNotExist", err)
	}
	if got, err := ReadEnvFile(root, "outside.env"); err == nil && got["SECRET"] != "" {
		t.Errorf("a symlink out of the volume read the host's file: %v", got)
	}
	if err := unix.Mkfifo(filepath.Join(root, "fifo.env"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(root, "dev.env"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bad.env", "big.env", ".", "fifo.env", "dev.env"} {
		if _, err := ReadEnvFile(root, name); err == nil {
			t.Errorf("%s: read, want an error", name)
		}
	}
}
