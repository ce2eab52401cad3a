package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/podrun/podrun/atomicfile"
)

// DefaultBinDirs are searched for CNI plugins, in order.
var DefaultBinDirs = []string{"/opt/cni/bin", "/usr/lib/cni"}

const loopbackConf = `{"cniVersion":"1.0.0","name":"podrun-loopback","plugins":[{"type":"loopback"}]}`

// defaultConf is podrun's own network, used when the CNI conf dir holds no
// configuration: a bridge with host-local addresses and portmap for hostPort.
// host-local keeps its reservations in its standard, host-wide directory
// (/var/lib/cni/networks/podrun), so that every podrun on the host, whatever
// its --root, shares one allocation for the one bridge.
const defaultConf = `{
  "cniVersion": "1.0.0",
  "name": "podrun",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "podrun0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.85.0.0/16"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}
  ]
}
`

// Network attaches pods to CNI networks with libcni.
type Network struct {
	ConfDir  string // the user's CNI configuration directory (only read)
	StateDir string // podrun's own CNI state: default conflist, cache, IPAM data
	cni      *libcni.CNIConfig
	plugins  plugins // the plugins of an ADD cut off, which DEL waits for
}

// NewNetwork returns a Network that runs plugins from binDirs.
func NewNetwork(confDir string, binDirs []string, stateDir string) *Network {
	return &Network{
		ConfDir:  confDir,
		StateDir: stateDir,
		cni:      libcni.NewCNIConfigWithCacheDir(binDirs, filepath.Join(stateDir, "cache"), nil),
		plugins:  plugins{proc: "/proc", binDirs: binDirs},
	}
}

// Config returns the network configuration list to attach pods with: the
// first configuration in ConfDir (by name, as the kubelet picks it), else
// podrun's default bridge network, written under StateDir. The user's files
// are never written.
func (n *Network) Config() ([]byte, error) {
	files, err := libcni.ConfFiles(n.ConfDir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return nil, fmt.Errorf("reading CNI conf dir %s: %w", n.ConfDir, err)
	}
	if len(files) > 0 {
		return confListBytes(files[0])
	}
	data := []byte(defaultConf)
	path := filepath.Join(n.StateDir, "net.d", "podrun.conflist")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if old, err := os.ReadFile(path); err != nil || string(old) != string(data) {
		if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
			return nil, fmt.Errorf("writing default CNI config: %w", err)
		}
	}
	return data, nil
}

// confListBytes reads a .conflist, or wraps a single-plugin .conf in a list.
func confListBytes(file string) ([]byte, error) {
	if filepath.Ext(file) == ".conflist" {
		if _, err := libcni.ConfListFromFile(file); err != nil {
			return nil, fmt.Errorf("CNI config %s: %w", file, err)
		}
		return os.ReadFile(file)
	}
	// A single-plugin .conf is still what many devices ship; containerd's
	// go-cni up-converts it the same way.
	conf, err := libcni.ConfFromFile(file) //lint:ignore SA1019 see above
	if err != nil {
		return nil, fmt.Errorf("CNI config %s: %w", file, err)
	}
	list, err := libcni.ConfListFromConf(conf) //lint:ignore SA1019 see above
	if err != nil {
		return nil, fmt.Errorf("CNI config %s: %w", file, err)
	}
	return list.Bytes, nil
}

// PortMapping is one hostPort to publish through the portmap plugin.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// Attachment identifies one pod's attachment to the network.
type Attachment struct {
	ContainerID  string // the sandbox (pause) container's id
	NetNS        string // path of the pod's network namespace
	PodNamespace string
	PodName      string
	PodUID       string
	Ports        []PortMapping
}

func (a Attachment) runtimeConf() *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: a.ContainerID,
		NetNS:       a.NetNS,
		IfName:      "eth0",
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", a.PodNamespace},
			{"K8S_POD_NAME", a.PodName},
			{"K8S_POD_INFRA_CONTAINER_ID", a.ContainerID},
			{"K8S_POD_UID", a.PodUID},
		},
	}
	if len(a.Ports) > 0 {
		rt.CapabilityArgs = map[string]interface{}{"portMappings": a.Ports}
	}
	return rt
}

func (a Attachment) loopbackConf() *libcni.RuntimeConf {
	rt := a.runtimeConf()
	rt.IfName = "lo"
	rt.CapabilityArgs = nil
	return rt
}

// Add brings up lo and attaches eth0 with conf (a conflist); it returns the
// pod's IPs. On error the caller must still call Del (a plugin may have
// half-succeeded).
func (n *Network) Add(ctx context.Context, conf []byte, a Attachment) ([]net.IP, error) {
	lo, err := libcni.ConfListFromBytes([]byte(loopbackConf))
	if err != nil {
		return nil, err
	}
	if _, err := n.cni.AddNetworkList(ctx, lo, a.loopbackConf()); err != nil {
		return nil, fmt.Errorf("CNI ADD loopback: %w", err)
	}
	list, err := libcni.ConfListFromBytes(conf)
	if err != nil {
		return nil, fmt.Errorf("parsing CNI config: %w", err)
	}
	res, err := n.cni.AddNetworkList(ctx, list, a.runtimeConf())
	if err != nil {
		return nil, fmt.Errorf("CNI ADD %s: %w", list.Name, err)
	}
	return resultIPs(res)
}

func resultIPs(res types.Result) ([]net.IP, error) {
	r, err := current.NewResultFromResult(res)
	if err != nil {
		return nil, fmt.Errorf("reading CNI result: %w", err)
	}
	var ips []net.IP
	for _, ip := range r.IPs {
		ips = append(ips, ip.Address.IP)
	}
	if len(ips) == 0 {
		return nil, errors.New("CNI result has no IP address")
	}
	return ips, nil
}

// Del detaches the pod; running it on a pod that was never (or is no
// longer) attached is success.
func (n *Network) Del(ctx context.Context, conf []byte, a Attachment) error {
	list, err := libcni.ConfListFromBytes(conf)
	if err != nil {
		return fmt.Errorf("parsing CNI config: %w", err)
	}
	if _, statErr := os.Stat(a.NetNS); statErr != nil {
		a.NetNS = "" // plugins release IPs and rules without a namespace
	}
	rt := a.runtimeConf()
	cached, err := n.cni.GetNetworkListCachedResult(list, rt)
	if err == nil && cached == nil {
		// An ADD cut off (a killed podrun) may have left its plugin running:
		// it would make its rules after this DEL.
		if err := n.plugins.wait(ctx, a.ContainerID); err != nil {
			return fmt.Errorf("CNI DEL %s: %w", list.Name, err)
		}
	}
	if err == nil && cached == nil && a.NetNS != "" {
		// An ADD that was cut off (its result never cached) may still have
		// run plugins that find what they made only through prevResult (the
		// firewall plugin's rules name the pod's IP): hand them the
		// addresses the pod's interface has.
		if list, err = withPrevResult(list, a.NetNS, rt.IfName); err != nil {
			return err
		}
	}
	var errs []error
	if err := n.cni.DelNetworkList(ctx, list, rt); err != nil {
		errs = append(errs, fmt.Errorf("CNI DEL %s: %w", list.Name, err))
	}
	lo, _ := libcni.ConfListFromBytes([]byte(loopbackConf))
	if err := n.cni.DelNetworkList(ctx, lo, a.loopbackConf()); err != nil {
		errs = append(errs, fmt.Errorf("CNI DEL loopback: %w", err))
	}
	return errors.Join(errs...)
}

// withPrevResult returns list with a prevResult in each plugin's
// configuration made of the addresses interface ifName has in the network
// namespace at netns; list itself when it has none, or when the list's
// version predates results on DEL (0.4.0).
func withPrevResult(list *libcni.NetworkConfigList, netns, ifName string) (*libcni.NetworkConfigList, error) {
	if ok, err := version.GreaterThanOrEqualTo(list.CNIVersion, "0.4.0"); err != nil || !ok {
		return list, err
	}
	addrs, err := InterfaceAddrs(netns, ifName)
	if err != nil || len(addrs) == 0 {
		return list, nil // no addresses to hand over: DEL goes on without them
	}
	zero := 0
	res := &current.Result{CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{{Name: ifName, Sandbox: netns}}}
	for _, a := range addrs {
		res.IPs = append(res.IPs, &current.IPConfig{Address: *a, Interface: &zero})
	}
	prev, err := res.GetAsVersion(list.CNIVersion)
	if err != nil {
		return nil, fmt.Errorf("CNI DEL %s: a result for version %s: %w", list.Name, list.CNIVersion, err)
	}
	out := *list
	out.Plugins = make([]*libcni.PluginConfig, len(list.Plugins))
	for i, p := range list.Plugins {
		if out.Plugins[i], err = libcni.InjectConf(p, map[string]interface{}{"prevResult": prev}); err != nil {
			return nil, fmt.Errorf("CNI DEL %s: %w", list.Name, err)
		}
	}
	return &out, nil
}
