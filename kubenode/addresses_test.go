package kubenode

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func ips(s ...string) []net.IP {
	var out []net.IP
	for _, a := range s {
		out = append(out, net.ParseIP(a))
	}
	return out
}

func TestParseNodeIPs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []net.IP
		err  string
	}{
		{"", nil, ""},
		{"192.0.2.2", ips("192.0.2.2"), ""},
		{" 192.0.2.2 , fd00::2 ", ips("192.0.2.2", "fd00::2"), ""},
		{"fd00::2,192.0.2.2", ips("fd00::2", "192.0.2.2"), ""},
		{"127.0.0.1", ips("127.0.0.1"), ""},
		{"0.0.0.0", ips("0.0.0.0"), ""},
		{"::", ips("::"), ""},
		{"010.000.000.001", ips("10.0.0.1"), ""}, // the kubelet's sloppy parse
		{"192.0.2.2,192.0.2.3", nil, "dual-stack pair"},
		{"fd00::2,fd00::3", nil, "dual-stack pair"},
		{"192.0.2.2,fd00::2,192.0.2.3", nil, "dual-stack pair"},
		{"0.0.0.0,::", nil, "cannot include"},
		{"192.0.2.x", nil, `"192.0.2.x" is not an IP address`},
		{"192.0.2.2,", nil, `"" is not an IP address`},
		{"node1", nil, `"node1" is not an IP address`},
	} {
		got, err := ParseNodeIPs(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseNodeIPs(%q) = %v, %v; want error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.EqualFunc(got, tc.want, net.IP.Equal) {
			t.Errorf("ParseNodeIPs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestCheckNodeIP(t *testing.T) {
	host := ips("127.0.0.1", "::1", "192.0.2.2", "fd00::2", "fe80::1")
	for _, tc := range []struct {
		ip         string
		loopbackOK bool
		err        string
	}{
		{"192.0.2.2", false, ""},
		{"fd00::2", false, ""},
		{"192.0.2.9", false, "not an address of this host"},
		{"fd00::9", true, "not an address of this host"},
		{"127.0.0.1", true, ""},
		{"127.0.0.2", true, ""}, // all of 127/8 is the loopback interface's
		{"::1", true, ""},
		{"127.0.0.1", false, "loopback"},
		{"fe80::1", true, "link-local"},
		{"169.254.1.1", true, "link-local"},
		{"224.0.0.1", true, "multicast"},
		{"0.0.0.0", true, "all zeros"},
		{"::", true, "all zeros"},
	} {
		err := CheckNodeIP(net.ParseIP(tc.ip), host, tc.loopbackOK)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckNodeIP(%s, loopbackOK %v) = %v, want %q", tc.ip, tc.loopbackOK, err, tc.err)
		}
	}
	if err := CheckNodeIP(net.IP{1, 2, 3}, host, true); err == nil {
		t.Errorf("CheckNodeIP of a 3-byte IP: nil error")
	}
}

func TestInternalIPs(t *testing.T) {
	// The host of these tests: eth0 192.0.2.2 and fd00::2 (its default
	// routes), eth1 198.51.100.7, loopback, a link-local address.
	addrs := ips("127.0.0.1", "::1", "192.0.2.2", "fd00::2", "198.51.100.7", "fe80::1")
	defaults := func(family net.IP) (net.IP, error) {
		if family != nil && family.To4() == nil {
			return net.ParseIP("fd00::2"), nil
		}
		return net.ParseIP("192.0.2.2"), nil
	}
	noRoute := func(net.IP) (net.IP, error) { return nil, errors.New("no default routes") }
	resolves := func(s ...string) func(string) []net.IP {
		return func(string) []net.IP { return ips(s...) }
	}
	for _, tc := range []struct {
		name    string
		nodeIPs []net.IP
		node    string
		lookup  func(string) []net.IP
		def     func(net.IP) (net.IP, error)
		fall    []net.IP
		want    []net.IP
		err     string
	}{
		{"--node-ip wins over all", ips("198.51.100.7"), "vm", resolves("192.0.2.2"), defaults, nil, ips("198.51.100.7"), ""},
		{"--node-ip loopback (a control plane on this machine)", ips("127.0.0.1"), "vm", nil, defaults, nil, ips("127.0.0.1"), ""},
		{"--node-ip dual-stack, in its order", ips("fd00::2", "192.0.2.2"), "vm", nil, defaults, nil, ips("fd00::2", "192.0.2.2"), ""},
		{"--node-ip not this host's", ips("192.0.2.99"), "vm", nil, defaults, nil, nil, "node IP 192.0.2.99: not an address of this host"},
		{"--node-ip secondary not this host's", ips("192.0.2.2", "fd00::99"), "vm", nil, defaults, nil, nil, "secondary node IP fd00::99"},
		{"--node-ip link-local", ips("fe80::1"), "vm", nil, defaults, nil, nil, "link-local"},
		{"the node's name is an IP", nil, "198.51.100.7", resolves("192.0.2.2"), defaults, nil, ips("198.51.100.7"), ""},
		{"the name resolves to an address of the host", nil, "vm", resolves("198.51.100.7"), defaults, nil, ips("198.51.100.7"), ""},
		{"the name's loopback address (Debian's /etc/hosts) is skipped", nil, "vm", resolves("127.0.1.1", "127.0.0.1"), defaults, nil, ips("192.0.2.2"), ""},
		{"the name's address of another host is skipped", nil, "vm", resolves("203.0.113.5"), defaults, nil, ips("192.0.2.2"), ""},
		{"IPv4 preferred among the name's", nil, "vm", resolves("fd00::2", "198.51.100.7"), defaults, nil, ips("198.51.100.7"), ""},
		{"else the other family's", nil, "vm", resolves("fd00::2"), defaults, nil, ips("fd00::2"), ""},
		{"--node-ip :: prefers IPv6 among the name's", ips("::"), "vm", resolves("198.51.100.7", "fd00::2"), defaults, nil, ips("fd00::2"), ""},
		{"--node-ip 0.0.0.0: the IPv4 default route's", ips("0.0.0.0"), "vm", nil, defaults, nil, ips("192.0.2.2"), ""},
		{"--node-ip ::: the IPv6 default route's", ips("::"), "vm", nil, defaults, nil, ips("fd00::2"), ""},
		{"nothing given: the default route's", nil, "vm", resolves(), defaults, nil, ips("192.0.2.2"), ""},
		{"no default route: podrun's fallback", nil, "vm", nil, noRoute, ips("10.1.1.1", "fd00::5"), ips("10.1.1.1", "fd00::5"), ""},
		{"no default route, no fallback", nil, "vm", nil, noRoute, nil, nil, "can't get an IP address of node vm: no default routes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := InternalIPs(tc.nodeIPs, tc.node, Host{Addrs: addrs, Lookup: tc.lookup, Default: tc.def, Fallback: tc.fall})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("InternalIPs = %v, %v; want error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.EqualFunc(got, tc.want, net.IP.Equal) {
				t.Errorf("InternalIPs = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestHostIPs(t *testing.T) {
	addr := func(t corev1.NodeAddressType, a string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: t, Address: a}
	}
	in, ex, hn := corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName
	for _, tc := range []struct {
		name  string
		addrs []corev1.NodeAddress
		want  []net.IP
		err   string
	}{
		{"one InternalIP", []corev1.NodeAddress{addr(in, "192.0.2.2"), addr(hn, "vm")}, ips("192.0.2.2"), ""},
		{"loopback (--node-ip 127.0.0.1)", []corev1.NodeAddress{addr(in, "127.0.0.1"), addr(hn, "vm")}, ips("127.0.0.1"), ""},
		{"dual-stack", []corev1.NodeAddress{addr(in, "192.0.2.2"), addr(in, "fd00::2")}, ips("192.0.2.2", "fd00::2"), ""},
		{"IPv6 primary", []corev1.NodeAddress{addr(in, "fd00::2"), addr(in, "192.0.2.2")}, ips("fd00::2", "192.0.2.2"), ""},
		{"first of the other family", []corev1.NodeAddress{addr(in, "192.0.2.2"), addr(in, "192.0.2.3"), addr(in, "fd00::2"), addr(in, "fd00::3")}, ips("192.0.2.2", "fd00::2"), ""},
		{"InternalIP before ExternalIP", []corev1.NodeAddress{addr(ex, "203.0.113.1"), addr(in, "192.0.2.2")}, ips("192.0.2.2"), ""},
		{"ExternalIP's other family", []corev1.NodeAddress{addr(ex, "2001:db8::1"), addr(in, "192.0.2.2")}, ips("192.0.2.2", "2001:db8::1"), ""},
		{"ExternalIP only", []corev1.NodeAddress{addr(ex, "203.0.113.1")}, ips("203.0.113.1"), ""},
		{"not an IP skipped", []corev1.NodeAddress{addr(in, "vm"), addr(in, "192.0.2.2")}, ips("192.0.2.2"), ""},
		{"sloppy", []corev1.NodeAddress{addr(in, "010.000.000.001")}, ips("10.0.0.1"), ""},
		{"hostname only", []corev1.NodeAddress{addr(hn, "vm")}, nil, "host IP unknown"},
		{"none", nil, nil, "host IP unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HostIPs(&corev1.Node{Status: corev1.NodeStatus{Addresses: tc.addrs}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.EqualFunc(got, tc.want, net.IP.Equal) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
