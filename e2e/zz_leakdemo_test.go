package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/oci"
)

func sh(t *testing.T, c string) string {
	out, err := exec.Command("sh", "-c", c).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", c, err, out)
	}
	return string(out)
}

func TestZZLeakDemo(t *testing.T) {
	c, ctx := H.Client(t)
	out := sh(t, "ctr -a "+H.Address+" -n podrun-e2e run --rm "+H.Image+" hi1 sh -c 'echo hi; id; ls /'")
	t.Logf("ctr run: %s", out)
	if !strings.HasPrefix(out, "hi\n") {
		t.Fatalf("ctr run output %q", out)
	}
	img, err := c.GetImage(ctx, H.Image)
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := c.NewContainer(ctx, "leaky", containerd.WithNewSnapshot("leaky-snap", img), containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "1000")))
	if err != nil {
		t.Fatal(err)
	}
	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LeasesService().Create(ctx, leases.WithID("leaky-lease")); err != nil {
		t.Fatal(err)
	}
	sh(t, "ip netns add podrun-leaktest && ip link add vethleak0 type veth peer name eth0 netns podrun-leaktest && ip link add podrunleak0 type bridge")
	d := filepath.Join(H.TmpDir, "x", "pods", "uid1")
	os.MkdirAll(d, 0o755)
	if err := syscall.Mount("/tmp", d, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(H.Root, "cni", "networks", "podrun"), 0o755)
	os.WriteFile(filepath.Join(H.Root, "cni", "networks", "podrun", "10.88.0.5"), []byte("abc\neth0\n"), 0o644)
	os.WriteFile(filepath.Join(H.Root, "cni", "networks", "podrun", "last_reserved_ip.0"), []byte("10.88.0.5"), 0o644)
	sh(t, `iptables -t nat -N CNI-HOSTPORT-DNAT && iptables -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT &&
iptables -t nat -N CNI-0123456789abcdef01234567 && iptables -t nat -A CNI-0123456789abcdef01234567 -d 10.88.0.0/16 -m comment --comment "name: \"podrun\" id: \"abc\"" -j ACCEPT &&
iptables -t nat -A POSTROUTING -s 10.88.0.5/32 -m comment --comment "name: \"podrun\" id: \"abc\"" -j CNI-0123456789abcdef01234567`)
	os.Mkdir("/tmp/podrun-stray-test", 0o755)
}
