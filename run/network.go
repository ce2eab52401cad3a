package run

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
)

// sayOnce reports msg the first time this process has it to say: a note
// about the host that would otherwise repeat for every pod.
// sayOnce reports a note once per process and, unless cfg.Debug, once
// per host: a marker under <root>/notes keeps later commands quiet.
func (h *Host) sayOnce(msg string) {
	if _, said := h.said.LoadOrStore(msg, true); said {
		return
	}
	sum := sha256.Sum256([]byte(msg))
	marker := filepath.Join(h.cfg.Root, "notes", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(marker); err == nil && !h.cfg.Debug {
		return
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err == nil {
		_ = os.WriteFile(marker, []byte(msg+"\n"), 0o600)
	}
	h.report(Event{Msg: msg})
}

// hostsFile is the pod's /etc/hosts, as the kubelet writes it.
func (r *podRun) hostsFile() ([]byte, error) {
	aliases := r.pod.Spec.HostAliases
	if r.hostNetwork() {
		host, err := os.ReadFile("/etc/hosts")
		if err != nil {
			return nil, err
		}
		return sandbox.HostEtcHosts(host, aliases), nil
	}
	hostname, domain := sandbox.PodHostname(r.pod.Pod, r.h.cfg.ClusterDomain)
	return sandbox.EtcHosts(hostname, domain, r.ips, aliases), nil
}

// resolvConf is the pod's resolv.conf: the kubelet's GetPodDNS from the
// host's resolver configuration, written as containerd writes it.
func (r *podRun) resolvConf() ([]byte, error) {
	etc, err := os.ReadFile(sandbox.HostResolvConf)
	if err != nil {
		return nil, fmt.Errorf("reading the host's resolv.conf: %w", err)
	}
	upstream, err := os.ReadFile(sandbox.ResolvedUpstream)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	file, note := sandbox.HostDNS(etc, upstream, r.hostNetwork())
	if note != "" {
		r.h.sayOnce("note: " + note)
	}
	c, fellBack, warnings := sandbox.PodDNS(r.pod.Pod, sandbox.ParseResolvConf(file))
	if fellBack {
		r.h.sayOnce(fmt.Sprintf("note: podrun has no cluster DNS: pods with dnsPolicy %s or %s fall back to %s (the host's resolver), as the kubelet does without --cluster-dns",
			corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault))
	}
	for _, w := range warnings {
		r.h.report(Event{Pod: r.key, Msg: "warning: " + w})
	}
	return sandbox.ResolvConf(c, file), nil
}

// attachment is the pod's CNI attachment. Its port mappings are passed to
// DEL as well as ADD: the portmap plugin removes the rules of the mappings
// it is given. pod is nil when its state is lost.
func attachment(uid string, pod *corev1.Pod) sandbox.Attachment {
	a := sandbox.Attachment{ContainerID: SandboxID(uid), NetNS: sandbox.NetNSPath(sandbox.NetNSName(uid)), PodUID: uid}
	if pod == nil {
		return a
	}
	a.PodNamespace, a.PodName = pod.Namespace, pod.Name
	for _, c := range resources.Containers(pod) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				a.Ports = append(a.Ports, sandbox.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort,
					Protocol: strings.ToLower(string(p.Protocol)), HostIP: p.HostIP})
			}
		}
	}
	return a
}

// hostPort is one claim on a host port: the scheduler's NodePorts check,
// which podrun, having no scheduler, makes before it starts a pod.
type hostPort struct {
	protocol corev1.Protocol
	ip       string // "" and 0.0.0.0: every address
	port     int32
}

func (a hostPort) conflicts(b hostPort) bool {
	wild := func(ip string) bool { return ip == "" || ip == "0.0.0.0" }
	return a.protocol == b.protocol && a.port == b.port && (a.ip == b.ip || wild(a.ip) || wild(b.ip))
}

func (a hostPort) String() string {
	ip := a.ip
	if ip == "" {
		ip = "0.0.0.0"
	}
	return fmt.Sprintf("%s:%d/%s", ip, a.port, a.protocol)
}

// hostPorts lists the host ports a pod claims (a hostNetwork pod's ports
// are host ports: defaulting set hostPort to containerPort).
func hostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	for _, c := range resources.Containers(p) {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				out = append(out, hostPort{protocol: port.Protocol, ip: port.HostIP, port: port.HostPort})
			}
		}
	}
	return out
}

// hostPortConflicts returns, by index in pods, the error of each pod that
// claims a host port held by a pod on the node or by an earlier pod of the
// list. A pod on the node of the same namespace/name is left out: up
// replaces it (or leaves it as it is); so is a finished pod, whose network
// is released (and which the scheduler no longer counts).
func hostPortConflicts(pods []*manifest.Pod, node []*PodInfo) map[int]error {
	type holder struct {
		key   string
		ports []hostPort
	}
	var held []holder
	names := map[string]bool{}
	for _, p := range pods {
		names[p.Namespace+"/"+p.Name] = true
	}
	for _, p := range node {
		key := p.Namespace + "/" + p.Name
		if p.Pod == nil || names[key] || p.Pod.Status.Phase == corev1.PodSucceeded || p.Pod.Status.Phase == corev1.PodFailed {
			continue
		}
		held = append(held, holder{key, hostPorts(p.Pod)})
	}
	errs := map[int]error{}
	for i, p := range pods {
		mine := hostPorts(p.Pod)
		var clashes []string
		for _, h := range held {
			for _, a := range mine {
				for _, b := range h.ports {
					if a.conflicts(b) {
						clashes = append(clashes, fmt.Sprintf("%s (held by pod %s)", a, h.key))
					}
				}
			}
		}
		if len(clashes) > 0 {
			errs[i] = fmt.Errorf("pod %s/%s: host port already in use: %s; nothing was started", p.Namespace, p.Name, strings.Join(clashes, ", "))
			continue
		}
		held = append(held, holder{p.Namespace + "/" + p.Name, mine})
	}
	return errs
}
