package main

import (
	"strings"
	"testing"
	"time"
)

// TestPullRate: --pull-rate's bytes per second, with or without a B.
func TestPullRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"", 0},
		{"512Ki", 512 << 10},
		{"512KiB", 512 << 10},
		{"2Mi", 2 << 20},
		{"2MiB", 2 << 20},
		{"1M", 1000000},
		{"1MB", 1000000},
		{"500B", 500},
		{"1", 1},
	} {
		if got, err := pullRate(tc.in); err != nil || got != tc.want {
			t.Errorf("pullRate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestInsecureRegistries(t *testing.T) {
	got, err := insecureRegistries([]string{"Registry.lan:5000", " other.lan "})
	if err != nil || strings.Join(got, ",") != "registry.lan:5000,other.lan" {
		t.Errorf("insecureRegistries = %q, %v", got, err)
	}
	if _, err := insecureRegistries([]string{"https://x"}); err == nil || exitCode(err) != exitInvalid {
		t.Errorf("a scheme: %v; want a usage error", err)
	}
}

// TestPullLink: --pull-rate takes a quantity of bytes per second, and
// --image-pull-progress-deadline 0 or more; anything else is a usage error
// naming the flag.
func TestPullLink(t *testing.T) {
	for _, tc := range []struct {
		deadline time.Duration
		rate     string
		wantErr  string
	}{
		{time.Minute, "", ""},
		{0, "512Ki", ""},
		{time.Minute, "2Mi", ""},
		{time.Minute, "2MiB", ""},
		{time.Minute, "1M", ""},
		{time.Minute, "B", "--pull-rate"},
		{time.Minute, "2MiBB", "--pull-rate"},
		{time.Minute, "fast", "--pull-rate"},
		{time.Minute, "-1Mi", "--pull-rate"},
		{time.Minute, "0", "--pull-rate"},
		{time.Minute, "100m", "--pull-rate"},
		{-time.Second, "", "--image-pull-progress-deadline"},
	} {
		l, err := pullLink(tc.deadline, tc.rate)
		if tc.wantErr != "" {
			if err == nil || exitCode(err) != exitInvalid || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("pullLink(%v, %q) = %v; want a usage error naming %s", tc.deadline, tc.rate, err, tc.wantErr)
			}
			continue
		}
		if err != nil || l.Deadline() != tc.deadline {
			t.Errorf("pullLink(%v, %q) = %v, %v", tc.deadline, tc.rate, l, err)
		}
	}
}
