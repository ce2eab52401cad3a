package downward

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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

// Hugepages returns the machine's huge pages as the kubelet's capacity
// counts them: hugepages-<size> = nr_hugepages pages of each size in
// /sys/kernel/mm/hugepages (none when the kernel has none).
func Hugepages() corev1.ResourceList {
	return hugepages("/sys/kernel/mm/hugepages")
}

func hugepages(dir string) corev1.ResourceList {
	out := corev1.ResourceList{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		kb, pre := strings.CutPrefix(e.Name(), "hugepages-")
		kb, suf := strings.CutSuffix(kb, "kB")
		if !pre || !suf {
			continue
		}
		size, err := strconv.ParseInt(kb, 10, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			continue
		}
		name := corev1.ResourceName(corev1.ResourceHugePagesPrefix + resource.NewQuantity(size*1024, resource.BinarySI).String())
		out[name] = *resource.NewQuantity(n*size*1024, resource.BinarySI)
	}
	return out
}
