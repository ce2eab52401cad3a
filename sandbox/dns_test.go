package sandbox

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseResolvConf(t *testing.T) {
	got := ParseResolvConf([]byte(`# generated
nameserver 10.0.0.2
search old.example
 nameserver   10.0.0.3  # trailing words are ignored
nameserver
search corp.example. example.com
options ndots:2
options timeout:1 rotate
`))
	want := DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"corp.example", "example.com"}, Options: []string{"timeout:1", "rotate"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseResolvConf = %+v, want %+v", got, want)
	}
}

func TestPodDNS(t *testing.T) {
	host := DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"corp.example"}, Options: []string{"ndots:2", "rotate", "edns0"}}
	two := "2"
	cfg := &corev1.PodDNSConfig{
		Nameservers: []string{"10.0.0.3", "192.0.2.53"},
		Searches:    []string{"corp.example", "svc.example"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}, {Name: "single-request"}},
	}
	pod := func(policy corev1.DNSPolicy, hostNetwork bool, c *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNetwork, DNSConfig: c}}
	}
	for _, tt := range []struct {
		name     string
		pod      *corev1.Pod
		want     DNSConfig
		fellBack bool
	}{
		{"Default is the host's", pod(corev1.DNSDefault, false, nil), host, false},
		{"ClusterFirst falls back to Default", pod(corev1.DNSClusterFirst, false, nil), host, true},
		{"ClusterFirst on the host network is Default", pod(corev1.DNSClusterFirst, true, nil), host, false},
		{"ClusterFirstWithHostNet falls back to Default", pod(corev1.DNSClusterFirstWithHostNet, true, nil), host, true},
		{"None is the dnsConfig alone", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}}}),
			DNSConfig{Servers: []string{"192.0.2.53"}, Options: []string{"ndots:2"}}, false},
		{"dnsConfig merged, duplicates dropped, options replaced by name", pod(corev1.DNSDefault, false, cfg),
			DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3", "192.0.2.53"}, Searches: []string{"corp.example", "svc.example"},
				Options: []string{"ndots:2", "rotate", "edns0", "single-request"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, fellBack, warnings := PodDNS(tt.pod, host)
			if !reflect.DeepEqual(got, tt.want) || fellBack != tt.fellBack || len(warnings) != 0 {
				t.Errorf("PodDNS = %+v, %v, %q; want %+v, %v, no warnings", got, fellBack, warnings, tt.want, tt.fellBack)
			}
		})
	}
	if !reflect.DeepEqual(host.Options, []string{"ndots:2", "rotate", "edns0"}) || len(host.Servers) != 2 {
		t.Errorf("PodDNS changed the host configuration: %+v", host)
	}
}

func TestPodDNSLimits(t *testing.T) {
	host := DNSConfig{Servers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}}
	for i := 0; i < 30; i++ {
		host.Searches = append(host.Searches, fmt.Sprintf("h%02d.%s", i, strings.Repeat("x", 60)))
	}
	host.Searches = append(host.Searches, strings.Repeat("y", 254)) // too long for glibc: dropped
	pod := &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault, DNSConfig: &corev1.PodDNSConfig{
		Nameservers: []string{"192.0.2.53"}, Searches: []string{"p1.example", "p2.example", "p3.example"}}}}
	got, _, warnings := PodDNS(pod, host)
	if want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}; !reflect.DeepEqual(got.Servers, want) {
		t.Errorf("servers = %v, want the first 3: %v", got.Servers, want)
	}
	// 34 paths: cut to the first 32 (p2 and p3 go), then the 254-character
	// one goes; the 30 host paths of 64 characters and p1 make a
	// 1959-character line, which fits.
	if len(got.Searches) != 31 || got.Searches[30] != "p1.example" || strings.Contains(strings.Join(got.Searches, " "), "yyy") {
		t.Errorf("searches = %d %v", len(got.Searches), got.Searches)
	}
	if len(warnings) != 2 ||
		warnings[0] != "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3" ||
		!strings.HasPrefix(warnings[1], "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: h00.") {
		t.Errorf("warnings = %q", warnings)
	}

	long := DNSConfig{}
	for i := 0; i < 10; i++ {
		long.Searches = append(long.Searches, strings.Repeat(string(rune('a'+i)), 250))
	}
	got, _, _ = PodDNS(&corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault}}, long)
	// 10 paths of 250 characters: a 2509-character line; 8 fit in 2048 (2007).
	if n := len(strings.Join(got.Searches, " ")); len(got.Searches) != 8 || n > 2048 {
		t.Errorf("searches cut to %d paths, %d characters; want 8 paths", len(got.Searches), n)
	}
}

func TestResolvConf(t *testing.T) {
	c := DNSConfig{Servers: []string{"10.0.0.2", "192.0.2.53"}, Searches: []string{"corp.example", "svc.example"}, Options: []string{"ndots:2", "rotate"}}
	want := "search corp.example svc.example\nnameserver 10.0.0.2\nnameserver 192.0.2.53\noptions ndots:2 rotate\n"
	if got := string(ResolvConf(c, []byte("host file\n"))); got != want {
		t.Errorf("ResolvConf =\n%s\nwant\n%s", got, want)
	}
	if got := string(ResolvConf(DNSConfig{Servers: []string{"10.0.0.2"}}, nil)); got != "nameserver 10.0.0.2\n" {
		t.Errorf("ResolvConf with a server only = %q", got)
	}
	if got := string(ResolvConf(DNSConfig{}, []byte("# nothing\n"))); got != "# nothing\n" {
		t.Errorf("ResolvConf of nothing = %q, want the host's file", got)
	}
}

func TestHostDNS(t *testing.T) {
	stub := []byte("# systemd-resolved stub\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n")
	upstream := []byte("nameserver 192.0.2.1\nnameserver 192.0.2.2\nsearch lan\n")
	mixed := []byte("nameserver 127.0.0.1\nnameserver 192.0.2.9\nnameserver ::1\n")
	for _, tt := range []struct {
		name          string
		etc, upstream []byte
		hostNetwork   bool
		want          string
		noteHas       string
	}{
		{"no loopback: the host's file", upstream, nil, false, string(upstream), ""},
		{"stub: systemd-resolved's upstream list", stub, upstream, false, string(upstream), "pods use systemd-resolved's /run/systemd/resolve/resolv.conf"},
		{"stub on the host network: kept", stub, upstream, true, string(stub), ""},
		{"stub without upstream: dropped", stub, nil, false, "# systemd-resolved stub\noptions edns0 trust-ad\nsearch lan\n", "pods get no nameserver unless their dnsConfig names one"},
		{"mixed: loopback ones dropped", mixed, upstream, false, "nameserver 192.0.2.9\n", "(127.0.0.1 ::1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file, note := HostDNS(tt.etc, tt.upstream, tt.hostNetwork)
			if string(file) != tt.want {
				t.Errorf("file =\n%s\nwant\n%s", file, tt.want)
			}
			if (tt.noteHas == "") != (note == "") || !strings.Contains(note, tt.noteHas) {
				t.Errorf("note = %q, want one with %q", note, tt.noteHas)
			}
		})
	}
}
