package daemon

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestReadStatusOnlyFromALiveDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "daemon.json")
	write := func(pid int) {
		data, _ := json.Marshal(Status{PID: pid, ManifestDir: "/m", Problems: []Problem{{Source: "/m/a.yaml", Msg: "bad"}}})
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(os.Getpid())
	if st, ok := ReadStatus(path); !ok || len(st.Problems) != 1 || st.ManifestDir != "/m" {
		t.Fatalf("live daemon's status: %+v, %v", st, ok)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	write(dead.Process.Pid)
	if _, ok := ReadStatus(path); ok {
		t.Error("a dead daemon's status was read")
	}
	if _, ok := ReadStatus(filepath.Join(t.TempDir(), "missing.json")); ok {
		t.Error("a missing status file was read")
	}
}
