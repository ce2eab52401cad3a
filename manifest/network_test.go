package manifest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValidateNetwork: dnsPolicy, dnsConfig and hostAliases as the API
// server checks them, with field paths.
func TestValidateNetwork(t *testing.T) {
	many := func(n int, f func(i int) string) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, f(i))
		}
		return out
	}
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"None with nameservers", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53", "2001:db8::53"},
				Searches: []string{".", "corp.example.", "_sip._tcp.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots"}}}
		}, nil},
		{"None without nameservers", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"corp.example"}}
		}, []string{"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"}},
		{"bad values", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "dns.example", "010.0.0.1", "8.8.8.8"},
				Searches: []string{"Corp.example", "ok.example"}, Options: []corev1.PodDNSConfigOption{{Name: "rotate"}, {}}}
		}, []string{
			`spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","dns.example","010.0.0.1","8.8.8.8"]: must not have more than 3 nameservers`,
			`spec.dnsConfig.nameservers[1]: Invalid value: "dns.example": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.dnsConfig.nameservers[2]: Invalid value: "010.0.0.1": must not have leading 0s`,
			`spec.dnsConfig.searches[0]: Invalid value: "Corp.example": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')`,
			"spec.dnsConfig.options[1]: Required value: must not be empty",
		}},
		{"search limits", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: many(33, func(i int) string { return strings.Repeat("a", 62) + string(rune('a'+i%26)) })}
		}, []string{
			"spec.dnsConfig.searches: Invalid value: [" + strings.Join(many(33, func(i int) string { return `"` + strings.Repeat("a", 62) + string(rune('a'+i%26)) + `"` }), ",") + "]: must not have more than 32 search paths",
			"spec.dnsConfig.searches: Invalid value: [" + strings.Join(many(33, func(i int) string { return `"` + strings.Repeat("a", 62) + string(rune('a'+i%26)) + `"` }), ",") + "]: must not have more than 2048 characters (including spaces) in the search list",
		}},
		{"hostAliases", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{
				{IP: "10.1.2.3", Hostnames: []string{"db", "db.local"}},
				{Hostnames: []string{"Bad_Name"}},
				{IP: "::ffff:1.2.3.4", Hostnames: []string{""}},
			}
		}, []string{
			"spec.hostAliases[1].ip: Required value",
			`spec.hostAliases[1].hostnames[0]: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`spec.hostAliases[2].ip: Invalid value: "::ffff:1.2.3.4": must not be an IPv4-mapped IPv6 address`,
			"spec.hostAliases[2].hostnames[0]: Required value",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.mutate, tt.want)
		})
	}
}
