package spec

import (
	"context"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/labels"
)

const (
	testPodUID = "0b3c1f9e-uid"
	testSbxID  = "sandbox-123"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: testPodUID}}
}

// baseInput returns a pod-network container input; tests mutate a copy.
func baseInput() ContainerInput {
	return ContainerInput{
		ID:  "ctr-1",
		Pod: testPod(),
		Container: &corev1.Container{
			Name:                   "app",
			Image:                  "busybox",
			Args:                   []string{"sleep", "3600"},
			TerminationMessagePath: "/dev/termination-log",
		},
		Image: Image{Ref: "docker.io/library/busybox:latest", Entrypoint: []string{"/bin/sh", "-c"}, Env: []string{"PATH=/bin"}},
		Sandbox: Sandbox{
			ID:           testSbxID,
			IPC:          "/proc/4242/ns/ipc",
			UTS:          "/proc/4242/ns/uts",
			PID:          4242,
			NetNSPath:    "/run/netns/podrun-abc",
			Hostname:     "web",
			EtcHosts:     "/pods/uid/etc-hosts",
			ResolvConf:   "/pods/uid/resolv.conf",
			HostnameFile: "/pods/uid/hostname",
			Shm:          "/pods/uid/shm",
			Cgroup:       "/podrun/pod" + testPodUID,
		},
		TerminationLog: "/pods/uid/containers/app/abcd",
	}
}

func mustContainer(t *testing.T, in ContainerInput) *specs.Spec {
	t.Helper()
	s, err := Container(context.Background(), in)
	if err != nil {
		t.Fatalf("Container: %v", err)
	}
	return s
}

func namespacesOf(s *specs.Spec) map[specs.LinuxNamespaceType]string {
	out := map[specs.LinuxNamespaceType]string{}
	for _, ns := range s.Linux.Namespaces {
		out[ns.Type] = ns.Path
	}
	return out
}

func mountAt(s *specs.Spec, dst string) []specs.Mount {
	var out []specs.Mount
	for _, m := range s.Mounts {
		if m.Destination == dst {
			out = append(out, m)
		}
	}
	return out
}

func TestContainerNamespaces(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*ContainerInput)
		want   map[specs.LinuxNamespaceType]string
	}{
		{
			name: "pod network",
			want: map[specs.LinuxNamespaceType]string{
				specs.PIDNamespace:     "",
				specs.IPCNamespace:     "/proc/4242/ns/ipc",
				specs.UTSNamespace:     "/proc/4242/ns/uts",
				specs.MountNamespace:   "",
				specs.NetworkNamespace: "/run/netns/podrun-abc",
			},
		},
		{
			name: "host network has no network namespace entry",
			mutate: func(in *ContainerInput) {
				in.Sandbox.HostNetwork = true
				in.Sandbox.NetNSPath = ""
			},
			want: map[specs.LinuxNamespaceType]string{
				specs.PIDNamespace:   "",
				specs.IPCNamespace:   "/proc/4242/ns/ipc",
				specs.UTSNamespace:   "/proc/4242/ns/uts",
				specs.MountNamespace: "",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			if tc.mutate != nil {
				tc.mutate(&in)
			}
			s := mustContainer(t, in)
			if got := namespacesOf(s); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("namespaces = %v, want %v", got, tc.want)
			}
			if len(s.Linux.Namespaces) != len(tc.want) {
				t.Errorf("%d namespace entries, want %d: %v", len(s.Linux.Namespaces), len(tc.want), s.Linux.Namespaces)
			}
			if s.Hostname != "" {
				t.Errorf("Hostname = %q, want empty when joining the sandbox UTS namespace", s.Hostname)
			}
		})
	}
}

func TestContainerProcess(t *testing.T) {
	in := baseInput()
	in.Env = []EnvVar{{Name: "PORT", Value: "8080"}}
	in.Container.Args = []string{"echo $(PORT)"}
	in.Image.User = "1000:2000"
	s := mustContainer(t, in)
	p := s.Process
	if want := []string{"/bin/sh", "-c", "echo 8080"}; !reflect.DeepEqual(p.Args, want) {
		t.Errorf("Args = %q, want %q", p.Args, want)
	}
	if want := []string{"PATH=/bin", "HOSTNAME=web", "PORT=8080"}; !reflect.DeepEqual(p.Env, want) {
		t.Errorf("Env = %q, want %q", p.Env, want)
	}
	if p.User.UID != 1000 || p.User.GID != 2000 {
		t.Errorf("User = %d:%d, want 1000:2000", p.User.UID, p.User.GID)
	}
	if p.Terminal {
		t.Error("Terminal = true, want false")
	}
	if p.NoNewPrivileges {
		t.Error("NoNewPrivileges = true, want false (Kubernetes allows privilege escalation by default)")
	}
	if p.Rlimits != nil {
		t.Errorf("Rlimits = %v, want none (inherited, as with the CRI plugin)", p.Rlimits)
	}
	if got := len(p.Capabilities.Bounding); got != 13 {
		t.Errorf("%d bounding capabilities, want containerd's 14 minus NET_RAW", got)
	}
	if s.Linux.CgroupsPath != "/podrun/pod"+testPodUID+"/ctr-1" {
		t.Errorf("CgroupsPath = %q", s.Linux.CgroupsPath)
	}
	if s.Root.Path != "rootfs" || s.Root.Readonly {
		t.Errorf("Root = %+v, want writable rootfs", s.Root)
	}
	if len(s.Linux.MaskedPaths) != 11 || len(s.Linux.ReadonlyPaths) != 5 {
		t.Errorf("masked/readonly paths changed: %v %v", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
}

func TestContainerUser(t *testing.T) {
	cases := []struct {
		user     string
		uid, gid uint32
		err      string
	}{
		{user: "", uid: 0, gid: 0},
		{user: "0", uid: 0, gid: 0},
		{user: "1000", uid: 1000, gid: 0},
		{user: "1000:50", uid: 1000, gid: 50},
		{user: "nginx", err: `image user "nginx": only numeric users are supported`},
		{user: "1000:staff", err: `image user "1000:staff": only numeric users are supported`},
		{user: "-1", err: `image user "-1": only numeric users are supported`},
		{user: ":5", err: `image user ":5": only numeric users are supported`},
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			in := baseInput()
			in.Image.User = tc.user
			s, err := Container(context.Background(), in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u := s.Process.User; u.UID != tc.uid || u.GID != tc.gid {
				t.Errorf("user = %d:%d, want %d:%d", u.UID, u.GID, tc.uid, tc.gid)
			}
		})
	}
}

func TestContainerCwd(t *testing.T) {
	cases := []struct{ container, image, want string }{
		{"", "", "/"},
		{"", "/srv", "/srv"},
		{"/work", "/srv", "/work"},
	}
	for _, tc := range cases {
		in := baseInput()
		in.Container.WorkingDir = tc.container
		in.Image.WorkingDir = tc.image
		if got := mustContainer(t, in).Process.Cwd; got != tc.want {
			t.Errorf("cwd(container %q, image %q) = %q, want %q", tc.container, tc.image, got, tc.want)
		}
	}
}

func TestContainerAnnotations(t *testing.T) {
	s := mustContainer(t, baseInput())
	want := map[string]string{
		labels.SandboxID:                      testSbxID,
		"io.kubernetes.cri.container-type":    "container",
		"io.kubernetes.cri.sandbox-namespace": "default",
		"io.kubernetes.cri.sandbox-uid":       testPodUID,
		"io.kubernetes.cri.sandbox-name":      "web",
		"io.kubernetes.cri.container-name":    "app",
		"io.kubernetes.cri.image-name":        "docker.io/library/busybox:latest",
	}
	if !reflect.DeepEqual(s.Annotations, want) {
		t.Errorf("annotations = %v, want %v", s.Annotations, want)
	}
	if got := s.Annotations["io.kubernetes.cri.sandbox-id"]; got != testSbxID {
		t.Errorf("CRI sandbox-id annotation = %q, want %q", got, testSbxID)
	}
	in := baseInput()
	in.ShimGroup = "podrun-shim-1"
	s = mustContainer(t, in)
	if g, id := s.Annotations["io.containerd.runc.v2.group"], s.Annotations["io.kubernetes.cri.sandbox-id"]; g != in.ShimGroup || id != testSbxID {
		t.Errorf("with a shim group of its own: group %q, sandbox-id %q; want %q, %q", g, id, in.ShimGroup, testSbxID)
	}
}

func bind(src, dst, mode string) specs.Mount {
	return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"rbind", "rprivate", mode}}
}

// bindMounts returns the bind mounts of s in order.
func bindMounts(s *specs.Spec) []specs.Mount {
	var out []specs.Mount
	for _, m := range s.Mounts {
		if m.Type == "bind" {
			out = append(out, m)
		}
	}
	return out
}

func TestContainerMounts(t *testing.T) {
	in := baseInput()
	in.Mounts = []Mount{
		{Source: "/pods/uid/volumes/kubernetes.io~empty-dir/cache/sub", Destination: "/var/cache/app", ReadOnly: false, NoDev: true},
		{Source: "/pods/uid/volumes/kubernetes.io~configmap/cfg", Destination: "/etc/app", ReadOnly: true},
		{Source: "/data", Destination: "/data"},
	}
	s := mustContainer(t, in)
	want := []specs.Mount{
		bind("/data", "/data", "rw"),
		bind("/pods/uid/volumes/kubernetes.io~configmap/cfg", "/etc/app", "ro"),
		bind("/pods/uid/etc-hosts", "/etc/hosts", "rw"),
		bind("/pods/uid/containers/app/abcd", "/dev/termination-log", "rw"),
		bind("/pods/uid/hostname", "/etc/hostname", "rw"),
		bind("/pods/uid/resolv.conf", "/etc/resolv.conf", "rw"),
		bind("/pods/uid/shm", "/dev/shm", "rw"),
		bind("/pods/uid/volumes/kubernetes.io~empty-dir/cache/sub", "/var/cache/app", "rw"),
	}
	// A disk-backed volume's bind is nodev (runc remounts it so).
	want[len(want)-1].Options = append(want[len(want)-1].Options, "nodev")
	if got := bindMounts(s); !reflect.DeepEqual(got, want) {
		t.Errorf("bind mounts:\n got %v\nwant %v", got, want)
	}
	if got := mountAt(s, "/dev/shm"); len(got) != 1 || got[0].Type != "bind" {
		t.Errorf("/dev/shm mounts = %v, want only the pod's bind mount", got)
	}
	if got := mountAt(s, "/run"); len(got) != 0 {
		t.Errorf("/run mounts = %v, want none (the CRI plugin drops the /run tmpfs)", got)
	}
	for _, dst := range []string{"/proc", "/dev", "/dev/pts", "/dev/mqueue", "/sys"} {
		if got := mountAt(s, dst); len(got) != 1 || got[0].Type == "bind" {
			t.Errorf("%s mounts = %v, want containerd's default", dst, got)
		}
	}
	cg := mountAt(s, "/sys/fs/cgroup")
	if len(cg) != 1 || cg[0].Type != "cgroup" || cg[0].Options[len(cg[0].Options)-1] != "ro" {
		t.Errorf("/sys/fs/cgroup mounts = %v, want one read-only cgroup mount", cg)
	}
	// the defaults come before every bind mount
	if m := s.Mounts[len(s.Mounts)-len(want)-1]; m.Destination != "/sys/fs/cgroup" {
		t.Errorf("mount before the bind mounts is %q, want /sys/fs/cgroup", m.Destination)
	}
}

func TestContainerUserMountsWin(t *testing.T) {
	in := baseInput()
	in.Mounts = []Mount{
		{Source: "/my/hosts", Destination: "/etc/hosts", ReadOnly: true},
		{Source: "/my/resolv", Destination: "/etc/resolv.conf/", ReadOnly: true},
		{Source: "/my/log", Destination: "/dev/termination-log"},
	}
	s := mustContainer(t, in)
	want := []specs.Mount{
		bind("/my/hosts", "/etc/hosts", "ro"),
		bind("/my/resolv", "/etc/resolv.conf/", "ro"),
		bind("/my/log", "/dev/termination-log", "rw"),
		bind("/pods/uid/hostname", "/etc/hostname", "rw"),
		bind("/pods/uid/shm", "/dev/shm", "rw"),
	}
	if got := bindMounts(s); !reflect.DeepEqual(got, want) {
		t.Errorf("bind mounts:\n got %v\nwant %v", got, want)
	}
}

func TestContainerDevMountDropsDefaultsUnderDev(t *testing.T) {
	in := baseInput()
	in.Mounts = []Mount{{Source: "/dev", Destination: "/dev"}}
	in.Sandbox.Shm = ""
	in.TerminationLog = ""
	s := mustContainer(t, in)
	for _, m := range s.Mounts {
		if strings.HasPrefix(m.Destination, "/dev/") {
			t.Errorf("default mount %q kept under a user /dev mount", m.Destination)
		}
	}
	if got := mountAt(s, "/dev"); len(got) != 1 || got[0].Type != "bind" {
		t.Errorf("/dev mounts = %v, want the user's bind mount only", got)
	}
}

func TestContainerNoDefaultFiles(t *testing.T) {
	in := baseInput()
	in.Sandbox.EtcHosts, in.Sandbox.ResolvConf, in.Sandbox.HostnameFile, in.Sandbox.Shm = "", "", "", ""
	in.TerminationLog = ""
	s := mustContainer(t, in)
	if got := bindMounts(s); len(got) != 0 {
		t.Errorf("bind mounts = %v, want none", got)
	}
	if got := mountAt(s, "/dev/shm"); len(got) != 1 || got[0].Type != "tmpfs" {
		t.Errorf("/dev/shm = %v, want containerd's default tmpfs", got)
	}
}

func TestContainerSecurityContext(t *testing.T) {
	f := false
	tr := true
	in := baseInput()
	in.Container.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &tr}
	s := mustContainer(t, in)
	if !s.Process.NoNewPrivileges {
		t.Error("NoNewPrivileges = false with allowPrivilegeEscalation: false")
	}
	if !s.Root.Readonly {
		t.Error("root not read-only with readOnlyRootFilesystem: true")
	}
	for dst, mode := range map[string]string{"/etc/hostname": "ro", "/etc/resolv.conf": "ro", "/etc/hosts": "rw", "/dev/shm": "rw"} {
		m := mountAt(s, dst)
		if len(m) != 1 || m[0].Options[2] != mode {
			t.Errorf("%s = %v, want mode %s", dst, m, mode)
		}
	}
}

func TestContainerErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*ContainerInput)
		want   string
	}{
		{"no sandbox id", func(in *ContainerInput) { in.Sandbox.ID = "" }, "sandbox id is empty"},
		{"no sandbox pid to share", func(in *ContainerInput) { in.Pod.Spec.ShareProcessNamespace, in.Sandbox.PID = secPtr(true), 0 }, "sandbox pid 0 is not a process id"},
		{"no IPC namespace", func(in *ContainerInput) { in.Sandbox.IPC = "" }, "sandbox IPC namespace is empty"},
		{"no UTS namespace", func(in *ContainerInput) { in.Sandbox.UTS = "" }, "sandbox UTS namespace is empty"},
		{"no netns", func(in *ContainerInput) { in.Sandbox.NetNSPath = "" }, "sandbox network namespace path is empty"},
		{"no hostname", func(in *ContainerInput) { in.Sandbox.Hostname = "" }, "sandbox hostname is empty"},
		{"no pod uid", func(in *ContainerInput) { in.Pod.UID = "" }, "pod default/web has no uid"},
		{"no id", func(in *ContainerInput) { in.ID = "" }, "empty container id"},
		{"no command", func(in *ContainerInput) { in.Container.Args = nil; in.Image.Entrypoint = nil }, "no command specified"},
		{"relative mount", func(in *ContainerInput) { in.Mounts = []Mount{{Source: "/a", Destination: "data"}} }, `mount destination "data" is not absolute`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			tc.mutate(&in)
			_, err := Container(context.Background(), in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
