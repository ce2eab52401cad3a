package main

import (
	"strings"
	"testing"
)

func TestInsecureRegistries(t *testing.T) {
	got, err := insecureRegistries([]string{"Registry.lan:5000", " other.lan "})
	if err != nil || strings.Join(got, ",") != "registry.lan:5000,other.lan" {
		t.Errorf("insecureRegistries = %q, %v", got, err)
	}
	if _, err := insecureRegistries([]string{"https://x"}); err == nil || exitCode(err) != exitInvalid {
		t.Errorf("a scheme: %v; want a usage error", err)
	}
}
