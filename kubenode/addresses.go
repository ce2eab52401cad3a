package kubenode

import (
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	nodeutil "k8s.io/component-helpers/node/util"
	netutils "k8s.io/utils/net"
)

// ProvidedNodeIPAnnotation is where a kubelet with an external cloud
// provider hints its --node-ip to the cloud controller manager
// (cloudproviderapi.AnnotationAlphaProvidedIPAddr). A node without a cloud
// provider, as podrun's, removes it (nodestatus.NodeAddress).
const ProvidedNodeIPAnnotation = "alpha.kubernetes.io/provided-node-ip"

// ParseNodeIPs reads --node-ip as the kubelet does without a cloud
// provider (nodeutil.ParseNodeIPArgument): one address, or a dual-stack
// pair (one IPv4, one IPv6), comma-separated, spaces around them ignored;
// "" is none. "0.0.0.0" or "::" alone asks for the default route's address
// of that family. Unlike the kubelet, which logs and ignores an entry that
// is not an IP, such an entry is an error.
func ParseNodeIPs(s string) ([]net.IP, error) {
	ips, invalid, err := nodeutil.ParseNodeIPArgument(s, "")
	if err != nil {
		return nil, err
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("%q is not an IP address", invalid[0])
	}
	return ips, nil
}

// CheckNodeIP says why ip cannot be the node's address, as the kubelet's
// validateNodeIP: not multicast, link-local or unspecified, and one of
// the host's addresses (host). A loopback address is refused too, unless
// loopbackOK (an address given with --node-ip: podrun accepts a node
// reached on loopback, for a control plane on the same machine; the
// kubelet refuses it).
func CheckNodeIP(ip net.IP, host []net.IP, loopbackOK bool) error {
	switch {
	case ip.To4() == nil && ip.To16() == nil:
		return errors.New("not a valid IP address")
	case ip.IsLoopback() && loopbackOK:
		return nil
	case ip.IsLoopback():
		return errors.New("a loopback address")
	case ip.IsMulticast():
		return errors.New("a multicast address")
	case ip.IsLinkLocalUnicast():
		return errors.New("a link-local unicast address")
	case ip.IsUnspecified():
		return errors.New("an all zeros address")
	}
	for _, h := range host {
		if h.Equal(ip) {
			return nil
		}
	}
	return errors.New("not an address of this host's network interfaces")
}

// Host is where the node's addresses are found when --node-ip names none
// (the kubelet's NodeAddress setter's sources).
type Host struct {
	// Addrs are the addresses of the host's interfaces (net.InterfaceAddrs).
	Addrs []net.IP
	// Lookup is what the node's name resolves to (/etc/hosts, DNS).
	Lookup func(name string) []net.IP
	// Default is the address of the default route's interface of family's
	// IP family, IPv4 when family is nil (utilnet.ResolveBindAddress).
	Default func(family net.IP) (net.IP, error)
	// Fallback are the addresses used when no default route has one
	// (podrun's: every address the pods see; the kubelet gives up).
	Fallback []net.IP
}

// InternalIPs are the node's InternalIP addresses, chosen as the kubelet's
// NodeAddress setter does: the --node-ip addresses (nodeIPs, checked with
// CheckNodeIP, loopback allowed); else the node's name when it is an IP;
// else the first address it resolves to that could be a node's (of the
// preferred family: IPv6 for --node-ip "::", else IPv4); else the default
// route's interface's address; else h.Fallback.
func InternalIPs(nodeIPs []net.IP, name string, h Host) ([]net.IP, error) {
	var primary, secondary net.IP
	if len(nodeIPs) > 0 {
		primary = nodeIPs[0]
	}
	if len(nodeIPs) > 1 {
		secondary = nodeIPs[1]
	}
	specified := primary != nil && !primary.IsUnspecified()
	if specified {
		if err := CheckNodeIP(primary, h.Addrs, true); err != nil {
			return nil, fmt.Errorf("node IP %s: %w", primary, err)
		}
		if secondary == nil || secondary.IsUnspecified() {
			return []net.IP{primary}, nil
		}
		if err := CheckNodeIP(secondary, h.Addrs, true); err != nil {
			return nil, fmt.Errorf("secondary node IP %s: %w", secondary, err)
		}
		return []net.IP{primary, secondary}, nil
	}
	if ip := netutils.ParseIPSloppy(name); ip != nil {
		return []net.IP{ip}, nil
	}
	preferV4 := primary == nil || primary.To4() != nil
	var chosen net.IP
	if h.Lookup != nil {
		for _, ip := range h.Lookup(name) {
			if CheckNodeIP(ip, h.Addrs, false) != nil {
				continue
			}
			if (ip.To4() != nil) == preferV4 {
				chosen = ip
				break
			}
			if chosen == nil {
				chosen = ip
			}
		}
	}
	if chosen != nil {
		return []net.IP{chosen}, nil
	}
	ip, err := h.Default(primary)
	if err == nil {
		return []net.IP{ip}, nil
	}
	if len(h.Fallback) > 0 {
		return h.Fallback, nil
	}
	return nil, fmt.Errorf("can't get an IP address of node %s: %w", name, err)
}

// HostIPs are the host IPs of node's pods, as the kubelet's
// utilnode.GetNodeHostIPs: the node's first InternalIP (else ExternalIP),
// and the first address of the other IP family after it, if any. The first
// is every pod's status.hostIP; both are its status.hostIPs and a
// hostNetwork pod's IPs.
func HostIPs(node *corev1.Node) ([]net.IP, error) {
	var all []net.IP
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type != t {
				continue
			}
			if ip := netutils.ParseIPSloppy(a.Address); ip != nil {
				all = append(all, ip)
			}
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("host IP unknown; known addresses: %v", node.Status.Addresses)
	}
	out := []net.IP{all[0]}
	for _, ip := range all {
		if netutils.IsIPv6(ip) != netutils.IsIPv6(out[0]) {
			return append(out, ip), nil
		}
	}
	return out, nil
}
