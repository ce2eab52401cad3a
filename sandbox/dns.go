package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DNSConfig is a pod's resolver configuration, what the kubelet hands the
// runtime (runtimeapi.DNSConfig) for it to write the pod's resolv.conf.
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// The limits the kubelet applies to the composed configuration (glibc's; the
// ExpandedDNSConfig limits, GA since 1.28). The API server refuses a
// dnsConfig beyond them; the host's file merged with it may still exceed them.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchLen       = 253 // longer search paths make some glibc versions abort
)

// ParseResolvConf reads a resolv.conf as the kubelet does: nameserver lines
// accumulate, the last search and the last options line win, and search
// paths lose a trailing dot.
func ParseResolvConf(data []byte) DNSConfig {
	var c DNSConfig
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) >= 2 {
				c.Servers = append(c.Servers, f[1])
			}
		case "search":
			c.Searches = nil
			for _, s := range f[1:] {
				c.Searches = append(c.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			c.Options = append([]string(nil), f[1:]...)
		}
	}
	return c
}

// PodDNS is the kubelet's GetPodDNS for a kubelet without cluster DNS: None
// starts from nothing; Default from host; ClusterFirst and
// ClusterFirstWithHostNet fall back to Default (fellBack tells, for a
// warning), except ClusterFirst on the host network, which is Default by
// definition. The pod's dnsConfig is then appended with duplicates dropped,
// its options replacing the host's of the same name, and the result is cut
// to the resolver's limits; warnings say what was cut, in the kubelet's words.
//
// Unlike the kubelet, whose options come out in map order, the options keep
// the order they first appear in.
func PodDNS(pod *corev1.Pod, host DNSConfig) (c DNSConfig, fellBack bool, warnings []string) {
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone:
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		fellBack = pod.Spec.DNSPolicy == corev1.DNSClusterFirstWithHostNet || !pod.Spec.HostNetwork
		c = host
	default:
		c = host
	}
	if d := pod.Spec.DNSConfig; d != nil {
		c.Servers = omitDuplicates(append(append([]string(nil), c.Servers...), d.Nameservers...))
		c.Searches = omitDuplicates(append(append([]string(nil), c.Searches...), d.Searches...))
		c.Options = mergeDNSOptions(c.Options, d.Options)
	}
	if len(c.Servers) > maxDNSNameservers {
		c.Servers = c.Servers[:maxDNSNameservers]
		warnings = append(warnings, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: "+strings.Join(c.Servers, " "))
	}
	var cut bool
	if c.Searches, cut = searchesFitLimits(c.Searches); cut {
		warnings = append(warnings, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "+strings.Join(c.Searches, " "))
	}
	return c, fellBack, warnings
}

func omitDuplicates(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			out = append(out, s)
			seen[s] = true
		}
	}
	return out
}

// mergeDNSOptions merges "name" and "name:value" options; a pod option
// replaces the host's option of the same name in place.
func mergeDNSOptions(host []string, pod []corev1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, o := range host {
		name, value, _ := strings.Cut(o, ":")
		set(name, value)
	}
	for _, o := range pod {
		value := ""
		if o.Value != nil {
			value = *o.Value
		}
		set(o.Name, value)
	}
	var out []string
	for _, n := range names {
		if values[n] != "" {
			n += ":" + values[n]
		}
		out = append(out, n)
	}
	return out
}

// searchesFitLimits is the kubelet's formDNSSearchFitsLimits: at most 32
// paths, none longer than 253 characters, and the line at most 2048
// characters, cutting from the end.
func searchesFitLimits(searches []string) ([]string, bool) {
	cut := false
	if len(searches) > maxDNSSearchPaths {
		searches, cut = searches[:maxDNSSearchPaths], true
	}
	var kept []string
	for _, s := range searches {
		if len(s) > maxDNSSearchLen {
			cut = true
			continue
		}
		kept = append(kept, s)
	}
	for len(strings.Join(kept, " ")) > maxDNSSearchListChars {
		kept, cut = kept[:len(kept)-1], true
	}
	return kept, cut
}

// ResolvConf renders c as containerd writes a pod's resolv.conf: the search
// line, one nameserver line each, the options line. With nothing to write,
// containerd copies the host's file, and so does this.
func ResolvConf(c DNSConfig, hostFile []byte) []byte {
	if len(c.Servers) == 0 && len(c.Searches) == 0 && len(c.Options) == 0 {
		return hostFile
	}
	var b bytes.Buffer
	if len(c.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(c.Searches, " "))
	}
	for _, s := range c.Servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(c.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(c.Options, " "))
	}
	return b.Bytes()
}

// Where the host's resolver configuration is read: the host's own file, and
// systemd-resolved's list of the real upstream servers.
const (
	HostResolvConf   = "/etc/resolv.conf"
	ResolvedUpstream = "/run/systemd/resolve/resolv.conf"
)

// HostDNS chooses the host resolver configuration a pod's DNS starts from
// (the kubelet's --resolv-conf). etc is the host's /etc/resolv.conf,
// upstream systemd-resolved's file (nil when there is none). A pod with its
// own network namespace cannot reach the host's loopback, so a nameserver on
// a loopback address (systemd-resolved's stub 127.0.0.53, a local dnsmasq)
// is of no use to it: when those are all etc has, upstream is used if it
// names servers (as kubeadm points the kubelet at it); otherwise the
// loopback servers are dropped. note says what was done, "" when nothing.
// A hostNetwork pod shares the host's loopback and gets etc as it is.
func HostDNS(etc, upstream []byte, hostNetwork bool) (file []byte, note string) {
	if hostNetwork {
		return etc, ""
	}
	var loopback []string
	usable := 0
	for _, s := range ParseResolvConf(etc).Servers {
		if ip := net.ParseIP(s); ip != nil && ip.IsLoopback() {
			loopback = append(loopback, s)
		} else {
			usable++
		}
	}
	if len(loopback) == 0 {
		return etc, ""
	}
	if usable == 0 && len(ParseResolvConf(upstream).Servers) > 0 {
		return upstream, fmt.Sprintf("the host's %s names only loopback nameservers (%s), which a pod's network namespace cannot reach; pods use systemd-resolved's %s instead",
			HostResolvConf, strings.Join(loopback, " "), ResolvedUpstream)
	}
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(string(etc), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if ip := net.ParseIP(f[1]); ip != nil && ip.IsLoopback() {
				continue
			}
		}
		b.WriteString(line)
	}
	what := "pods get the other nameservers only"
	if usable == 0 {
		what = "pods get no nameserver unless their dnsConfig names one"
	}
	return b.Bytes(), fmt.Sprintf("the host's %s names loopback nameservers (%s), which a pod's network namespace cannot reach; %s",
		HostResolvConf, strings.Join(loopback, " "), what)
}
