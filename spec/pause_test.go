package spec

import (
	"context"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podrun/podrun/labels"
)

func basePause() PauseInput {
	return PauseInput{
		ID:          "pause-1",
		Pod:         testPod(),
		NetNSPath:   "/run/netns/podrun-abc",
		Hostname:    "web",
		Rootfs:      "/var/lib/podrun/pause-root",
		Args:        []string{"/pause"},
		ExtraMounts: []Mount{{Source: "/usr/libexec/podrun/pause", Destination: "/pause", ReadOnly: true}},
		Cgroup:      "/podrun/pod" + testPodUID,
		ShimGroup:   "podrun-shim-3",
	}
}

func TestPause(t *testing.T) {
	s, err := Pause(context.Background(), basePause())
	if err != nil {
		t.Fatal(err)
	}
	wantNS := map[specs.LinuxNamespaceType]string{
		specs.PIDNamespace:     "",
		specs.IPCNamespace:     "",
		specs.UTSNamespace:     "",
		specs.MountNamespace:   "",
		specs.NetworkNamespace: "/run/netns/podrun-abc",
	}
	if got := namespacesOf(s); !reflect.DeepEqual(got, wantNS) {
		t.Errorf("namespaces = %v, want %v", got, wantNS)
	}
	if s.Hostname != "web" {
		t.Errorf("Hostname = %q, want web", s.Hostname)
	}
	if *s.Root != (specs.Root{Path: "/var/lib/podrun/pause-root", Readonly: true}) {
		t.Errorf("Root = %+v", *s.Root)
	}
	if want := []string{"/pause"}; !reflect.DeepEqual(s.Process.Args, want) {
		t.Errorf("Args = %q", s.Process.Args)
	}
	c := s.Process.Capabilities
	if len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
		t.Errorf("capabilities = %+v, want none", c)
	}
	if s.Linux.CgroupsPath != "/podrun/pod"+testPodUID+"/pause-1" {
		t.Errorf("CgroupsPath = %q", s.Linux.CgroupsPath)
	}
	wantAnn := map[string]string{
		labels.ShimGroup:                      "podrun-shim-3",
		labels.SandboxID:                      "pause-1",
		"io.kubernetes.cri.container-type":    "sandbox",
		"io.kubernetes.cri.sandbox-namespace": "default",
		"io.kubernetes.cri.sandbox-uid":       testPodUID,
		"io.kubernetes.cri.sandbox-name":      "web",
	}
	if !reflect.DeepEqual(s.Annotations, wantAnn) {
		t.Errorf("annotations = %v, want %v", s.Annotations, wantAnn)
	}
	if got, want := mountAt(s, "/pause"), []specs.Mount{bind("/usr/libexec/podrun/pause", "/pause", "ro")}; !reflect.DeepEqual(got, want) {
		t.Errorf("/pause mounts = %v, want %v", got, want)
	}
	if got := mountAt(s, "/run"); len(got) != 0 {
		t.Errorf("/run mounts = %v, want none", got)
	}
	if s.Process.Rlimits != nil {
		t.Errorf("Rlimits = %v, want none", s.Process.Rlimits)
	}
}

func TestPauseHostNetwork(t *testing.T) {
	in := basePause()
	in.NetNSPath = ""
	s, err := Pause(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	wantNS := map[specs.LinuxNamespaceType]string{
		specs.PIDNamespace:   "",
		specs.IPCNamespace:   "",
		specs.MountNamespace: "",
	}
	if got := namespacesOf(s); !reflect.DeepEqual(got, wantNS) {
		t.Errorf("namespaces = %v, want %v (host network and UTS)", got, wantNS)
	}
	if s.Hostname != "" {
		t.Errorf("Hostname = %q, want empty in the host UTS namespace", s.Hostname)
	}
}

func TestPauseImageRoot(t *testing.T) {
	in := basePause()
	in.Rootfs = ""
	in.ExtraMounts = nil
	in.Args = []string{"/pause", "-v"}
	s, err := Pause(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if *s.Root != (specs.Root{Path: "rootfs", Readonly: true}) {
		t.Errorf("Root = %+v, want the snapshot's rootfs, read-only", *s.Root)
	}
	if len(bindMounts(s)) != 0 {
		t.Errorf("bind mounts = %v, want none", bindMounts(s))
	}
}

func TestPauseErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*PauseInput)
		want   string
	}{
		{"no args", func(in *PauseInput) { in.Args = nil }, "pause: no process args"},
		{"relative rootfs", func(in *PauseInput) { in.Rootfs = "root" }, `pause rootfs "root" is not absolute`},
		{"no hostname", func(in *PauseInput) { in.Hostname = "" }, "pause: hostname is empty"},
		{"no pod", func(in *PauseInput) { in.Pod = nil }, "no pod"},
		{"no uid", func(in *PauseInput) { in.Pod.UID = "" }, "has no uid"},
		{"relative mount", func(in *PauseInput) { in.ExtraMounts[0].Destination = "pause" }, `mount destination "pause" is not absolute`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := basePause()
			tc.mutate(&in)
			_, err := Pause(context.Background(), in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
