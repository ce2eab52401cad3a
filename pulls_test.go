package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTermProgress(t *testing.T) {
	var buf bytes.Buffer
	p := &termProgress{w: &buf, fd: -1, pulls: map[string][2]int64{}}
	p.Update("r.io/a:1", 512, 2048)
	if got := buf.String(); got != "\r\x1b[Kpulling r.io/a:1: 512.0 B / 2.0 KiB (25%)" {
		t.Errorf("one pull: %q", got)
	}
	buf.Reset()
	p.Update("r.io/b:1", 1024, 2048)
	if got := buf.String(); got != "\r\x1b[Kpulling 2 images: 1.5 KiB / 4.0 KiB (37%)" {
		t.Errorf("two pulls: %q", got)
	}
	buf.Reset()
	p.clear()
	p.clear() // once erased, nothing more
	if got := buf.String(); got != "\r\x1b[K" {
		t.Errorf("clear: %q", got)
	}
	buf.Reset()
	p.Done("r.io/a:1")
	p.Done("r.io/b:1")
	if got := buf.String(); !strings.HasPrefix(got, "\r\x1b[Kpulling r.io/b:1") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("done: %q; want the remaining pull, then the line erased", got)
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
