package sandbox

import (
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	fqdn := func(p corev1.Pod) corev1.Pod { p.Spec.SetHostnameAsFQDN = ptr(true); return p }
	web := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	sub := web
	sub.Spec.Subdomain = "front"
	for _, tt := range []struct {
		name              string
		pod               corev1.Pod
		host, domain, uts string
		wantErr           string
	}{
		{"pod name", web, "web", "", "web", ""},
		{"spec.hostname", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Hostname: "front"}}, "front", "", "front", ""},
		{"truncated to 63 without a trailing dash", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long + "xyz"}}, strings.Repeat("a", 62), "", strings.Repeat("a", 62), ""},
		{"subdomain", sub, "web", "front.shop.svc.cluster.local", "web", ""},
		{"setHostnameAsFQDN", fqdn(sub), "web", "front.shop.svc.cluster.local", "web.front.shop.svc.cluster.local", ""},
		{"setHostnameAsFQDN without subdomain", fqdn(web), "web", "", "web", ""},
		{"FQDN over 64 characters", fqdn(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("w", 40), Namespace: "shop"}, Spec: corev1.PodSpec{Subdomain: "front"}}),
			strings.Repeat("w", 40), "front.shop.svc.cluster.local", "",
			"FQDN " + strings.Repeat("w", 40) + ".front.shop.svc.cluster.local is too long (64 characters is the max, 69 characters requested)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host, domain := PodHostname(&tt.pod, "cluster.local")
			if host != tt.host || domain != tt.domain {
				t.Errorf("PodHostname = %q, %q; want %q, %q", host, domain, tt.host, tt.domain)
			}
			uts, err := Hostname(&tt.pod, "cluster.local")
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Hostname error = %v, want %q", err, tt.wantErr)
			case tt.wantErr == "" && (err != nil || uts != tt.uts):
				t.Errorf("Hostname = %q, %v; want %q", uts, err, tt.uts)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

var aliases = []corev1.HostAlias{
	{IP: "10.1.2.3", Hostnames: []string{"db", "db.local"}},
	{IP: "fd00::1", Hostnames: []string{"cache"}},
}

func TestEtcHosts(t *testing.T) {
	const head = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	ips := []net.IP{net.ParseIP("10.85.0.7"), net.ParseIP("fd85::7")}
	for _, tt := range []struct {
		name, domain string
		aliases      []corev1.HostAlias
		want         string
	}{
		{"plain", "", nil, head + "10.85.0.7\tweb\nfd85::7\tweb\n"},
		{"FQDN first with a domain", "front.shop.svc.cluster.local", nil,
			head + "10.85.0.7\tweb.front.shop.svc.cluster.local\tweb\nfd85::7\tweb.front.shop.svc.cluster.local\tweb\n"},
		{"host aliases", "", aliases,
			head + "10.85.0.7\tweb\nfd85::7\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tdb\tdb.local\nfd00::1\tcache\n"},
	} {
		if got := string(EtcHosts("web", tt.domain, ips, tt.aliases)); got != tt.want {
			t.Errorf("%s: EtcHosts =\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

func TestHostEtcHosts(t *testing.T) {
	host := []byte("127.0.0.1\tlocalhost\n10.0.0.5\tnode1\n")
	want := "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n10.0.0.5\tnode1\n" +
		"\n# Entries added by HostAliases.\n10.1.2.3\tdb\tdb.local\nfd00::1\tcache\n"
	if got := string(HostEtcHosts(host, aliases)); got != want {
		t.Errorf("HostEtcHosts =\n%s\nwant\n%s", got, want)
	}
	if got := string(HostEtcHosts(host, nil)); got != "# Kubernetes-managed hosts file (host network).\n"+string(host) {
		t.Errorf("HostEtcHosts without aliases =\n%s", got)
	}
}

// TestHostnameOverride: hostnameOverride wins over hostname and subdomain,
// and gives the pod no domain.
func TestHostnameOverride(t *testing.T) {
	o := "custom-host.example"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Hostname: "h", Subdomain: "s", HostnameOverride: &o}}
	if h, d := PodHostname(pod, "cluster.local"); h != o || d != "" {
		t.Errorf("PodHostname = %q, %q; want %q and no domain", h, d, o)
	}
	if h, err := Hostname(pod, "cluster.local"); h != o || err != nil {
		t.Errorf("Hostname = %q, %v", h, err)
	}
}
