package sandbox

import (
	"net"
	"testing"
	"time"
)

func TestCacheHostIPs(t *testing.T) {
	start := time.Unix(1000, 0)
	now := start
	calls := 0
	lookup := func() []net.IP {
		calls++
		return []net.IP{net.ParseIP("192.0.2.1"), net.ParseIP("2001:db8::1")}
	}
	get := CacheHostIPs(lookup, func() time.Time { return now })
	for _, step := range []struct {
		at    time.Duration // since start
		calls int
	}{
		{0, 1},                        // first use looks up
		{5 * time.Second, 1},          // within the TTL: cached
		{hostIPsTTL - time.Second, 1}, // still within
		{hostIPsTTL, 2},               // expired: looked up again
		{hostIPsTTL + time.Second, 2}, // cached from the second lookup
		{time.Second, 3},              // the clock went back: looked up again
	} {
		now = start.Add(step.at)
		ips := get()
		if calls != step.calls {
			t.Fatalf("at %v: %d lookups, want %d", step.at, calls, step.calls)
		}
		if len(ips) != 2 || ips[0].String() != "192.0.2.1" {
			t.Fatalf("at %v: %v", step.at, ips)
		}
		ips[0] = nil // a caller's change does not reach the cache
	}
	if ips := get(); ips[0] == nil {
		t.Fatal("a caller's change reached the cache")
	}
}
