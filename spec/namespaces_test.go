package spec

import (
	"context"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// TestPodNamespaces checks the namespaces of the pause and of a container,
// and the container's /dev/shm, for hostPID, hostIPC and
// shareProcessNamespace, as the CRI plugin sets them up.
func TestPodNamespaces(t *testing.T) {
	const net, ipc, uts, pid = "/run/netns/podrun-abc", "/proc/4242/ns/ipc", "/proc/4242/ns/uts", "/proc/4242/ns/pid"
	tests := []struct {
		name      string
		mutate    func(*corev1.PodSpec)
		pause     map[specs.LinuxNamespaceType]string
		container map[specs.LinuxNamespaceType]string
		shm       string
	}{
		{"default: IPC shared with the pause, a PID namespace per container", nil,
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.IPCNamespace: "", specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: net},
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.IPCNamespace: ipc, specs.UTSNamespace: uts, specs.MountNamespace: "", specs.NetworkNamespace: net},
			"/pods/uid/shm"},
		{"shareProcessNamespace: the pause's PID namespace", func(s *corev1.PodSpec) { s.ShareProcessNamespace = secPtr(true) },
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.IPCNamespace: "", specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: net},
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: pid, specs.IPCNamespace: ipc, specs.UTSNamespace: uts, specs.MountNamespace: "", specs.NetworkNamespace: net},
			"/pods/uid/shm"},
		{"shareProcessNamespace false", func(s *corev1.PodSpec) { s.ShareProcessNamespace = secPtr(false) },
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.IPCNamespace: "", specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: net},
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.IPCNamespace: ipc, specs.UTSNamespace: uts, specs.MountNamespace: "", specs.NetworkNamespace: net},
			"/pods/uid/shm"},
		{"hostPID: the pause and the containers in the host's", func(s *corev1.PodSpec) { s.HostPID = true },
			map[specs.LinuxNamespaceType]string{specs.IPCNamespace: "", specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: net},
			map[specs.LinuxNamespaceType]string{specs.IPCNamespace: ipc, specs.UTSNamespace: uts, specs.MountNamespace: "", specs.NetworkNamespace: net},
			"/pods/uid/shm"},
		{"hostIPC: the host's IPC namespace and /dev/shm", func(s *corev1.PodSpec) { s.HostIPC = true },
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: net},
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.UTSNamespace: uts, specs.MountNamespace: "", specs.NetworkNamespace: net},
			"/dev/shm"},
		{"hostPID and hostIPC", func(s *corev1.PodSpec) { s.HostPID, s.HostIPC = true, true },
			map[specs.LinuxNamespaceType]string{specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: net},
			map[specs.LinuxNamespaceType]string{specs.UTSNamespace: uts, specs.MountNamespace: "", specs.NetworkNamespace: net},
			"/dev/shm"},
		{"no pause: the pinned IPC and UTS namespaces", func(s *corev1.PodSpec) {},
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.IPCNamespace: "", specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: net},
			map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.IPCNamespace: "/pods/uid/ipc-ns", specs.UTSNamespace: "/pods/uid/uts-ns", specs.MountNamespace: "", specs.NetworkNamespace: net},
			"/pods/uid/shm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pin, cin := basePause(), baseInput()
			if tt.mutate != nil {
				tt.mutate(&pin.Pod.Spec)
				tt.mutate(&cin.Pod.Spec)
			}
			if cin.Pod.Spec.HostIPC {
				cin.Sandbox.IPC = "" // the host's, as run passes it
			}
			if strings.HasPrefix(tt.name, "no pause") {
				cin.Sandbox.IPC, cin.Sandbox.UTS, cin.Sandbox.PID = "/pods/uid/ipc-ns", "/pods/uid/uts-ns", 0
			}
			p, err := Pause(context.Background(), pin)
			if err != nil {
				t.Fatal(err)
			}
			if got := namespacesOf(p); !reflect.DeepEqual(got, tt.pause) || len(p.Linux.Namespaces) != len(tt.pause) {
				t.Errorf("pause namespaces = %v, want %v", p.Linux.Namespaces, tt.pause)
			}
			c := mustContainer(t, cin)
			if got := namespacesOf(c); !reflect.DeepEqual(got, tt.container) || len(c.Linux.Namespaces) != len(tt.container) {
				t.Errorf("container namespaces = %v, want %v", c.Linux.Namespaces, tt.container)
			}
			if got := mountAt(c, "/dev/shm"); len(got) != 1 || !reflect.DeepEqual(got[0], bind(tt.shm, "/dev/shm", "rw")) {
				t.Errorf("/dev/shm mounts = %v, want a bind mount of %s", got, tt.shm)
			}
		})
	}
}
