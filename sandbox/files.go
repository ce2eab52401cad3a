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
