// How a pod's names resolve: the "sandbox: files" step (writeFiles) writes
// its /etc/hosts, resolv.conf and hostname, made from the host's files
// (read through Deps.HostFile) as the kubelet makes them.

package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/sandbox"
)

// sayOnce reports msg, a note about the host that would otherwise repeat
// for every pod, once per process and, unless cfg.Debug, once per host: a
// marker under <root>/notes keeps later commands quiet.
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

// hostsPath is the host's hosts file, which a hostNetwork pod's starts from.
const hostsPath = "/etc/hosts"

// hostsFile is the pod's /etc/hosts, as the kubelet writes it.
func (r *podRun) hostsFile() ([]byte, error) {
	aliases := r.pod.Spec.HostAliases
	if r.hostNetwork() {
		host, err := r.h.hostFile(hostsPath)
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
	etc, err := r.h.hostFile(sandbox.HostResolvConf)
	if err != nil {
		return nil, fmt.Errorf("reading the host's resolv.conf: %w", err)
	}
	upstream, err := r.h.hostFile(sandbox.ResolvedUpstream)
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

// writeFiles writes the pod's hostname, hosts and resolv.conf files, and
// records its IPs on the sandbox container.
func (r *podRun) writeFiles(ctx context.Context) error {
	if r.hostNetwork() {
		r.ips = r.h.hostIPs()
		r.state.PodIPs = ipStrings(r.ips)
		if err := r.h.saveState(r.state); err != nil {
			return err
		}
	}
	ipLabel := map[string]string{labels.PodIPs: strings.Join(r.state.PodIPs, ",")}
	if err := r.h.engine.SetLabels(ctx, r.sandboxID, ipLabel); err != nil {
		return err
	}
	hosts, err := r.hostsFile()
	if err != nil {
		return err
	}
	resolv, err := r.resolvConf()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"etc-hosts":   hosts,
		"resolv.conf": resolv,
		"hostname":    []byte(r.hostname + "\n"),
	} {
		if err := r.h.disk.WriteFile(r.layout.File(name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
