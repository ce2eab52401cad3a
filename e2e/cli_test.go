package e2e

// kubectl's habits on a node: `up -f FILE` returns once the pod is up and
// `down -f FILE` removes it; the README's exit codes of a pod that failed
// and of one the node refused (the others: main's TestExitCodeTable).

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/internal/doctable"
)

// TestUpDownFilename: `podrun up -f pod.yaml` (-f is the file, as in
// kubectl, not --foreground) returns once the pod is up, and `podrun down
// -f pod.yaml` removes it.
func TestUpDownFilename(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "cl-up.yaml", admissionPod("cl-up", ""))
	downOnCleanup(t, file)
	start := time.Now()
	stdout, stderr, code := H.Podrun(t, "", "up", "-f", file)
	if code != 0 || !strings.Contains(stdout, "pod/default/cl-up created (Running)") {
		t.Fatalf("up -f %s: exit %d after %v, stdout %q; want 0 and created (Running)\n%s", file, code, time.Since(start), stdout, stderr)
	}
	if row := psRow(t, "cl-up"); row == nil || row[3] != "Running" {
		t.Errorf("after up -f returned: ps row %q, want Running", row)
	}
	stdout, stderr, code = H.Podrun(t, "", "down", "-f", file)
	if code != 0 || !strings.Contains(stdout, "pod/default/cl-up deleted") {
		t.Fatalf("down -f %s: exit %d, stdout %q; want 0 and deleted\n%s", file, code, stdout, stderr)
	}
	if row := psRow(t, "cl-up", "-a"); row != nil || len(podContainers(t, "cl-up")) != 0 {
		t.Errorf("after down -f: ps row %q, %d containers; want none", row, len(podContainers(t, "cl-up")))
	}
}

// TestExitCodeTableRuntime: a pod that failed and a pod the node refused
// exit with the codes of the README's rows that name them.
func TestExitCodeTableRuntime(t *testing.T) {
	H.require(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := doctable.Rows(string(readme), "## Exit codes")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	meaning := map[int]string{}
	for _, r := range rows {
		code, err := strconv.Atoi(r[0])
		if err != nil || len(r) != 2 {
			t.Fatalf("README.md exit codes: row %q is not | CODE | MEANING |", r)
		}
		meaning[code] = r[1]
	}
	failed := H.WriteManifest(t, "cl-failed.yaml", strings.Replace(admissionPod("cl-failed", "  restartPolicy: Never\n"), `["sleep", "3600"]`, `["sh", "-c", "exit 3"]`, 1))
	refused := H.WriteManifest(t, "cl-refused.yaml", admissionPod("cl-refused", "  nodeSelector: {disktype: ssd}\n"))
	downOnCleanup(t, failed, refused)
	for _, tt := range []struct {
		name, file string // name as the README's row says it
		args       []string
		stderr     string
	}{
		{"a pod failed", failed, []string{"--wait=completion"}, `container "app" exited with code 3`},
		{"the node refused a pod", refused, nil, "pod default/cl-refused refused by the node: NodeAffinity"},
	} {
		_, stderr, code := H.Podrun(t, "", append([]string{"up", "-f", tt.file}, tt.args...)...)
		if !strings.Contains(meaning[code], tt.name) || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("up -f %s: exit %d, the README's row %q; want the row of %q, and %q in stderr:\n%s", tt.file, code, meaning[code], tt.name, tt.stderr, stderr)
		}
	}
}
