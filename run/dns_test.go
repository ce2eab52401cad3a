package run

import (
	"errors"
	"io/fs"
	"net"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/sandbox"
)

// dnsRun is pod default/web of spec ps, attached at 10.0.0.2, on a Host
// whose host files are m's; notes collects what the Host reports.
func dnsRun(t *testing.T, m *fakeMachine, ps corev1.PodSpec, clusterDomain string) (r *podRun, notes func() []string) {
	t.Helper()
	var msgs []string
	h := NewHost(Config{Root: t.TempDir(), LogDir: t.TempDir(), ClusterDomain: clusterDomain}, m.deps(fake.New()),
		func(e Event) { msgs = append(msgs, e.Msg) }, nil)
	t.Cleanup(func() { _ = h.Close() })
	pod := &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: testUID}, Spec: ps}, UID: testUID}
	return &podRun{h: h, pod: pod, key: pod.Key(), ips: []net.IP{net.ParseIP("10.0.0.2")}}, func() []string { return msgs }
}

// podHostsHead is the part of a pod's /etc/hosts that is always there.
const podHostsHead = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"

// TestHostsFile: a pod with its own network gets the kubelet's hosts file
// for its name and IP, the host's never read; a hostNetwork pod gets the
// host's /etc/hosts (read through Deps.HostFile), host aliases after either.
func TestHostsFile(t *testing.T) {
	const hostHosts = "127.0.0.1\tlocalhost\n192.0.2.10\tnode1\n"
	aliases := []corev1.HostAlias{{IP: "198.51.100.7", Hostnames: []string{"db", "db.local"}}}
	for _, tc := range []struct {
		name      string
		spec      corev1.PodSpec
		domain    string
		hostHosts *string // the host's /etc/hosts; nil: there is none
		want      string
		wantRead  []string
		wantErr   error
	}{
		{name: "pod network", want: podHostsHead + "10.0.0.2\tweb\n"},
		{name: "pod network, hostname and subdomain", spec: corev1.PodSpec{Hostname: "db-0", Subdomain: "db"}, domain: "cluster.local",
			want: podHostsHead + "10.0.0.2\tdb-0.db.default.svc.cluster.local\tdb-0\n"},
		{name: "pod network, host aliases", spec: corev1.PodSpec{HostAliases: aliases},
			want: podHostsHead + "10.0.0.2\tweb\n\n# Entries added by HostAliases.\n198.51.100.7\tdb\tdb.local\n"},
		{name: "host network", spec: corev1.PodSpec{HostNetwork: true}, hostHosts: new(hostHosts),
			want: "# Kubernetes-managed hosts file (host network).\n" + hostHosts, wantRead: []string{hostsPath}},
		{name: "host network, host aliases", spec: corev1.PodSpec{HostNetwork: true, HostAliases: aliases}, hostHosts: new(hostHosts),
			want:     "# Kubernetes-managed hosts file (host network).\n" + hostHosts + "\n# Entries added by HostAliases.\n198.51.100.7\tdb\tdb.local\n",
			wantRead: []string{hostsPath}},
		{name: "host network, no /etc/hosts", spec: corev1.PodSpec{HostNetwork: true}, wantRead: []string{hostsPath}, wantErr: fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMachine()
			delete(m.files, hostsPath)
			if tc.hostHosts != nil {
				m.files[hostsPath] = *tc.hostHosts
			}
			r, _ := dnsRun(t, m, tc.spec, tc.domain)
			got, err := r.hostsFile()
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("hostsFile: error %v, want %v", err, tc.wantErr)
			}
			if string(got) != tc.want {
				t.Errorf("hostsFile =\n%q\nwant\n%q", got, tc.want)
			}
			if !slices.Equal(m.read, tc.wantRead) {
				t.Errorf("host files read %q, want %q", m.read, tc.wantRead)
			}
		})
	}
}

// TestResolvConf: a pod's resolv.conf is the kubelet's, made from the
// host's resolv.conf (or systemd-resolved's upstream one when the host's
// names only its loopback stub, which a pod's network cannot reach), read
// through Deps.HostFile, with a note said once per host.
func TestResolvConf(t *testing.T) {
	const (
		plain    = "nameserver 192.0.2.53\nsearch example.test\n"
		stub     = "nameserver 127.0.0.53\nsearch lan\n"
		upstream = "nameserver 192.0.2.1\nnameserver 192.0.2.2\n"
	)
	for _, tc := range []struct {
		name           string
		spec           corev1.PodSpec
		etc, upstream  string // "": no such file
		want, wantNote string
		wantErr        string
	}{
		{name: "Default", spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault}, etc: plain,
			want: "search example.test\nnameserver 192.0.2.53\n"},
		{name: "ClusterFirst falls back to the host's", spec: corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst}, etc: plain,
			want: "search example.test\nnameserver 192.0.2.53\n", wantNote: "podrun has no cluster DNS"},
		{name: "None with dnsConfig", etc: plain, spec: corev1.PodSpec{DNSPolicy: corev1.DNSNone, DNSConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"203.0.113.9"}, Searches: []string{"a.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: new("2")}}}},
			want: "search a.example\nnameserver 203.0.113.9\noptions ndots:2\n"},
		{name: "loopback stub: systemd-resolved's upstream", spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault}, etc: stub, upstream: upstream,
			want: "nameserver 192.0.2.1\nnameserver 192.0.2.2\n", wantNote: sandbox.ResolvedUpstream},
		{name: "loopback stub, no upstream: dropped", spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault}, etc: stub,
			want: "search lan\n", wantNote: "127.0.0.53"},
		{name: "loopback stub, host network: the host's as it is", spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault, HostNetwork: true}, etc: stub, upstream: upstream,
			want: "search lan\nnameserver 127.0.0.53\n"},
		{name: "no host resolv.conf", spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault}, wantErr: "reading the host's resolv.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMachine()
			delete(m.files, sandbox.HostResolvConf)
			for path, data := range map[string]string{sandbox.HostResolvConf: tc.etc, sandbox.ResolvedUpstream: tc.upstream} {
				if data != "" {
					m.files[path] = data
				}
			}
			r, notes := dnsRun(t, m, tc.spec, "")
			got, err := r.resolvConf()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("resolvConf: error %v, want %q (not exist)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("resolvConf =\n%q\nwant\n%q", got, tc.want)
			}
			if _, err := r.resolvConf(); err != nil { // a second pod says no note again
				t.Fatal(err)
			}
			var said []string
			for _, n := range notes() {
				if strings.HasPrefix(n, "note: ") {
					said = append(said, n)
				}
			}
			switch {
			case tc.wantNote == "" && len(said) > 0:
				t.Errorf("notes %q, want none", said)
			case tc.wantNote != "" && (len(said) != 1 || !strings.Contains(said[0], tc.wantNote)):
				t.Errorf("notes %q, want one saying %q", said, tc.wantNote)
			}
		})
	}
}
