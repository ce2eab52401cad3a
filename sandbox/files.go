package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Hostname is the pod's hostname as the kubelet sets it: spec.hostname, else
// the pod name, truncated to 63 characters (without a trailing '-' or '.').
func Hostname(pod *corev1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		return os.Hostname()
	}
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h, nil
}

// EtcHosts renders the kubelet-managed /etc/hosts of a pod network pod.
func EtcHosts(hostname string, ips []net.IP) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
	}
	return b.Bytes()
}

// HostEtcHosts is /etc/hosts for a hostNetwork pod: the host's own file, as
// the kubelet does, with its managed-file header.
func HostEtcHosts(hostFile []byte) []byte {
	return append([]byte("# Kubernetes-managed hosts file (host network).\n"), hostFile...)
}

// ResolvConf is the pod's resolv.conf. With no cluster DNS, ClusterFirst
// falls back to the host's resolver, like Default: the host's file is used.
func ResolvConf(hostFile []byte) []byte {
	return hostFile
}

// HostIPs are the node's addresses as the kubelet reports them: the global
// unicast addresses of the interfaces that are up, IPv4 first. A
// hostNetwork pod's IPs are these.
func HostIPs() []net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var v4, v6 []net.IP
	for _, i := range ifaces {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || strings.HasPrefix(i.Name, "veth") {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				v4 = append(v4, ipn.IP)
			} else {
				v6 = append(v6, ipn.IP)
			}
		}
	}
	return append(v4, v6...)
}
