package e2e

import (
	"strings"
	"testing"
)

// TestSmokeVersion checks that the built binary runs at all.
func TestSmokeVersion(t *testing.T) {
	stdout, stderr, code := H.Podrun(t, "", "version")
	if code != 0 {
		t.Fatalf("podrun version: exit %d; stderr:\n%s", code, stderr)
	}
	if strings.TrimSpace(stdout) == "" {
		t.Fatalf("podrun version printed nothing on stdout; stderr:\n%s", stderr)
	}
}
