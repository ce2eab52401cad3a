package kubenode

import (
	"bufio"
	"bytes"
	"runtime"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The host's files status.nodeInfo is read from, as cAdvisor reads them
// for the kubelet.
const (
	machineIDFile  = "/etc/machine-id"
	systemUUIDFile = "/sys/class/dmi/id/product_uuid"
	bootIDFile     = "/proc/sys/kernel/random/boot_id"
	osReleaseFile  = "/etc/os-release"
	kernelFile     = "/proc/sys/kernel/osrelease"
)

// SystemInfo is status.nodeInfo: the host's ids, kernel and OS image from
// its files (read; a file it cannot read leaves its field empty), the
// container runtime's version ("containerd://1.7.35") and podrun's, in the
// kubeletVersion field.
func SystemInfo(read func(path string) ([]byte, error), runtimeVersion, version string) corev1.NodeSystemInfo {
	line := func(path string) string {
		b, err := read(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	return corev1.NodeSystemInfo{
		MachineID:               line(machineIDFile),
		SystemUUID:              line(systemUUIDFile),
		BootID:                  line(bootIDFile),
		KernelVersion:           line(kernelFile),
		OSImage:                 osImage(read),
		ContainerRuntimeVersion: runtimeVersion,
		KubeletVersion:          version,
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
}

// osImage is os-release's PRETTY_NAME, or "Unknown" as cAdvisor says.
func osImage(read func(path string) ([]byte, error)) string {
	b, err := read(osReleaseFile)
	if err != nil {
		return "Unknown"
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		if v = strings.Trim(v, `'`); v != "" {
			return v
		}
	}
	return "Unknown"
}
