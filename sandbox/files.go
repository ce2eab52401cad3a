package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodHostname is a pod's hostname and domain as the kubelet generates them
// (GeneratePodHostNameAndDomain): spec.hostname, else the pod name,
// truncated to 63 characters (without a trailing '-' or '.'); with
// spec.subdomain, the domain <subdomain>.<namespace>.svc.<clusterDomain>.
func PodHostname(pod *corev1.Pod, clusterDomain string) (hostname, domain string) {
	if o := pod.Spec.HostnameOverride; o != nil && *o != "" {
		// hostnameOverride wins over hostname and subdomain; it names no
		// DNS record, so the pod has no domain (the kubelet's
		// GeneratePodHostNameAndDomain).
		return *o, ""
	}
	hostname = pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	if pod.Spec.Subdomain != "" {
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain
}

// Hostname is the pod's kernel hostname (UTS namespace, /etc/hostname,
// $HOSTNAME): the node's for a hostNetwork pod; else PodHostname's, or
// hostname.domain with setHostnameAsFQDN and a subdomain, which must fit the
// kernel's 64 characters (the kubelet's GetNodenameForKernel).
func Hostname(pod *corev1.Pod, clusterDomain string) (string, error) {
	if pod.Spec.HostNetwork {
		return os.Hostname()
	}
	hostname, domain := PodHostname(pod, clusterDomain)
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, nil
	}
	const fqdnMaxLen = 64
	fqdn := hostname + "." + domain
	if len(fqdn) > fqdnMaxLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
			fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}

// EtcHosts renders the kubelet-managed /etc/hosts of a pod network pod
// (managedHostsFileContent): localhost entries, a line for each pod IP
// with the FQDN first when the pod has a domain, then the host aliases.
func EtcHosts(hostname, domain string, ips []net.IP, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// HostEtcHosts is /etc/hosts for a hostNetwork pod: the host's own file, as
// the kubelet does, with its managed-file header and the host aliases.
func HostEtcHosts(hostFile []byte, aliases []corev1.HostAlias) []byte {
	b := append([]byte("# Kubernetes-managed hosts file (host network).\n"), hostFile...)
	return append(b, hostAliasEntries(aliases)...)
}

// hostAliasEntries is the kubelet's hostsEntriesFromHostAliases: a blank
// line, a comment, then one line per alias with all its hostnames.
func hostAliasEntries(aliases []corev1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
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
