package run

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
)

func portPod(name string, ports ...corev1.ContainerPort) *manifest.Pod {
	return &manifest.Pod{Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: ports}}},
	}}
}

func tcp(host int32, ip string) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: 80, HostPort: host, HostIP: ip, Protocol: corev1.ProtocolTCP}
}

// TestHostPortConflicts: the scheduler's NodePorts rule (same protocol and
// port, and the same address or either on every address), against the
// node's pods and earlier pods of the same up; a pod of the same name is
// being replaced and a finished pod has released its network: they hold
// nothing.
func TestHostPortConflicts(t *testing.T) {
	udp := corev1.ContainerPort{ContainerPort: 53, HostPort: 8053, Protocol: corev1.ProtocolUDP}
	done := portPod("done", tcp(5050, "")).Pod
	done.Status.Phase = corev1.PodSucceeded
	node := []*PodInfo{
		{Namespace: "default", Name: "held", Pod: portPod("held", tcp(8080, ""), udp).Pod},
		{Namespace: "default", Name: "local", Pod: portPod("local", tcp(9090, "127.0.0.1")).Pod},
		{Namespace: "default", Name: "web", Pod: portPod("web", tcp(7070, "")).Pod},
		{Namespace: "default", Name: "done", Pod: done}, // finished: its network is released
		{Namespace: "default", Name: "crashed"},         // no state: nothing known
	}
	pods := []*manifest.Pod{
		portPod("a", tcp(8080, "127.0.0.1")),                  // 0: held on every address
		portPod("b", tcp(8053, "")),                           // ok: 8053 is held for UDP
		portPod("c", tcp(9090, "127.0.0.2")),                  // ok: another address
		portPod("d", tcp(9090, "0.0.0.0")),                    // 3: every address includes 127.0.0.1 and c's 127.0.0.2
		portPod("web", tcp(7070, "")),                         // ok: replaces web
		portPod("e", tcp(6060, "")),                           // ok
		portPod("f", tcp(6060, "10.0.0.1")),                   // 6: e of this up holds it
		portPod("g", corev1.ContainerPort{ContainerPort: 80}), // no host port
		portPod("h", tcp(5050, "")),                           // ok: done has finished
	}
	got := hostPortConflicts(pods, node)
	want := map[int]string{
		0: "pod default/a: host port already in use: 127.0.0.1:8080/TCP (held by pod default/held); nothing was started",
		3: "pod default/d: host port already in use: 0.0.0.0:9090/TCP (held by pod default/local), 0.0.0.0:9090/TCP (held by pod default/c); nothing was started",
		6: "pod default/f: host port already in use: 10.0.0.1:6060/TCP (held by pod default/e); nothing was started",
	}
	if len(got) != len(want) {
		t.Errorf("conflicts = %v, want %d", got, len(want))
	}
	for i, w := range want {
		if got[i] == nil || got[i].Error() != w {
			t.Errorf("pod %d: %v, want %q", i, got[i], w)
		}
	}
}
