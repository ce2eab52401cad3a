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
	for _, tt := range []struct {
		pod  corev1.Pod
		want string
	}{
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, "web"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Hostname: "front"}}, "front"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long + "xyz"}}, strings.Repeat("a", 62)},
	} {
		if got, err := Hostname(&tt.pod); err != nil || got != tt.want {
			t.Errorf("Hostname(%q) = %q, %v; want %q", tt.pod.Name, got, err, tt.want)
		}
	}
}

func TestEtcHosts(t *testing.T) {
	got := string(EtcHosts("web", []net.IP{net.ParseIP("10.85.0.7")}))
	for _, line := range []string{"# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", "10.85.0.7\tweb"} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("hosts file lacks %q:\n%s", line, got)
		}
	}
}
