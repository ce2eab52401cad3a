package downward

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// NodeAllocatable returns this machine's allocatable cpu, memory and
// ephemeral-storage: the CPUs this process may run on, MemTotal of
// /proc/meminfo, and the size of the filesystem holding dir (podrun's state
// directory, as the kubelet counts the filesystem of its root dir). podrun
// reserves nothing for the system and has no eviction thresholds, so
// allocatable is the capacity (the kubelet subtracts its reservations and
// hard eviction thresholds, by default 100Mi of memory and 10% of the disk).
func NodeAllocatable(dir string) (corev1.ResourceList, error) {
	mem, err := MemTotal()
	if err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(st.Blocks)*int64(st.Bsize), resource.BinarySI), // Bsize is int32 on 32-bit arm,
	}, nil
}

// MemTotal is the machine's memory in bytes: MemTotal of /proc/meminfo.
func MemTotal() (int64, error) { return memTotal("/proc/meminfo") }

// memTotal returns MemTotal of a meminfo file, in bytes.
func memTotal(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		fields := bytes.Fields(s.Bytes())
		if len(fields) == 3 && string(fields[0]) == "MemTotal:" && string(fields[2]) == "kB" {
			kb, err := strconv.ParseInt(string(fields[1]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: MemTotal: %w", path, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("%s: no MemTotal line", path)
}

// NodeName is this machine's node name as the kubelet names its node by
// default: the hostname, lowercased.
func NodeName() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return strings.ToLower(strings.TrimSpace(h)), nil
}
