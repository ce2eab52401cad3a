package ctrd

import (
	"strings"
	"testing"
)

func TestIsAttachment(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"sha256-" + hex + ".sig", true},
		{"sha256-" + hex + ".att", true},
		{"sha256-" + hex + ".sbom", true},
		{"registry.example.com/app:sha256-" + hex + ".sig", true},
		{"docker.io/library/sha256-" + hex + ".sig:latest", false},
		{"registry.example.com/app:1", false},
		{"sha256-" + hex[:62] + ".sig", false},
		{"sha256-" + strings.ToUpper(hex) + ".sig", false},
		{"sha256-" + hex + ".sig.old", false},
		{"registry.example.com/app@sha256:" + hex, false},
	} {
		if got := isAttachment(tc.name); got != tc.want {
			t.Errorf("isAttachment(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
