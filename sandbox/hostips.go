package sandbox

import (
	"net"
	"slices"
	"sync"
	"time"
)

// hostIPsTTL is how long the node's addresses are reused: the kubelet
// reports a pod's hostIP(s) (and a hostNetwork pod's IPs) from its node
// object's addresses, refreshed every 10 s (nodeStatusUpdateFrequency). A
// lookup dumps every link of the host, a veth per pod among them, and a
// daemon's resync lists each of its pods.
const hostIPsTTL = 10 * time.Second

// CacheHostIPs is lookup, called at most once per hostIPsTTL of now.
func CacheHostIPs(lookup func() []net.IP, now func() time.Time) func() []net.IP {
	var mu sync.Mutex
	var at time.Time
	var ips []net.IP
	return func() []net.IP {
		mu.Lock()
		defer mu.Unlock()
		if t := now(); at.IsZero() || t.Sub(at) >= hostIPsTTL || t.Before(at) {
			ips, at = lookup(), t
		}
		return slices.Clone(ips)
	}
}
