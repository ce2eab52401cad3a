package resources

import (
	"math"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// req builds requirements from "cpu", "memory" pairs of requests and limits
// ("" leaves one out).
func req(cpuReq, memReq, cpuLim, memLim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{}
	set := func(l *corev1.ResourceList, name corev1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *l == nil {
			*l = corev1.ResourceList{}
		}
		(*l)[name] = resource.MustParse(v)
	}
	set(&r.Requests, corev1.ResourceCPU, cpuReq)
	set(&r.Requests, corev1.ResourceMemory, memReq)
	set(&r.Limits, corev1.ResourceCPU, cpuLim)
	set(&r.Limits, corev1.ResourceMemory, memLim)
	return r
}

func pod(rs ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{}
	for i, r := range rs {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
	}
	return p
}

var always = corev1.ContainerRestartPolicyAlways

func TestQOSClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"nothing set", pod(req("", "", "", "")), corev1.PodQOSBestEffort},
		{"equal requests and limits", pod(req("500m", "64Mi", "500m", "64Mi")), corev1.PodQOSGuaranteed},
		{"two guaranteed", pod(req("1", "1Gi", "1", "1Gi"), req("100m", "8Mi", "100m", "8Mi")), corev1.PodQOSGuaranteed},
		{"memory only", pod(req("", "64Mi", "", "64Mi")), corev1.PodQOSBurstable},
		{"request below limit", pod(req("100m", "64Mi", "200m", "64Mi")), corev1.PodQOSBurstable},
		{"guaranteed and besteffort", pod(req("1", "1Gi", "1", "1Gi"), req("", "", "", "")), corev1.PodQOSBurstable},
		{"requests only", pod(req("100m", "", "", "")), corev1.PodQOSBurstable},
	} {
		if got := QOSClass(tc.pod); got != tc.want {
			t.Errorf("%s: QOSClass = %s, want %s", tc.name, got, tc.want)
		}
	}
	// An init container counts like the others.
	p := pod(req("1", "1Gi", "1", "1Gi"))
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: req("", "", "", "")}}
	if got := QOSClass(p); got != corev1.PodQOSBurstable {
		t.Errorf("guaranteed app, besteffort init: %s, want Burstable", got)
	}
	// Pod-level resources decide alone.
	p = pod(req("", "", "", ""))
	lvl := req("1", "1Gi", "1", "1Gi")
	p.Spec.Resources = &lvl
	if got := QOSClass(p); got != corev1.PodQOSGuaranteed {
		t.Errorf("pod-level equal requests and limits: %s, want Guaranteed", got)
	}
}

// str shows the settings a test checks, in a fixed order.
func str(r *specs.LinuxResources) string {
	s := ""
	if r.CPU != nil {
		if r.CPU.Shares != nil {
			s += " shares=" + itoa(int64(*r.CPU.Shares))
		}
		if r.CPU.Quota != nil {
			s += " quota=" + itoa(*r.CPU.Quota)
		}
		if r.CPU.Period != nil {
			s += " period=" + itoa(int64(*r.CPU.Period))
		}
	}
	if r.Memory != nil {
		if r.Memory.Limit != nil {
			s += " mem=" + itoa(*r.Memory.Limit)
		}
		if r.Memory.Swap != nil {
			s += " swap=" + itoa(*r.Memory.Swap)
		}
	}
	for _, k := range []string{"memory.oom.group", "memory.swap.max"} {
		if v, ok := r.Unified[k]; ok {
			s += " " + k + "=" + v
		}
	}
	return s
}

func itoa(v int64) string { return resource.NewQuantity(v, resource.DecimalSI).String() }

const gib = 1 << 30

func TestContainer(t *testing.T) {
	v1 := Node{MemoryCapacity: 10 * gib, SwapController: true, MinOOMScoreAdj: -1000}
	v2 := Node{MemoryCapacity: 10 * gib, CgroupV2: true, SwapController: true, MinOOMScoreAdj: -1000}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		node    Node
		want    string
		wantAdj int
	}{
		{"besteffort", pod(req("", "", "", "")), v1, " shares=2 period=100k", 1000},
		{"guaranteed", pod(req("250m", "20Mi", "250m", "20Mi")), v1,
			" shares=256 quota=25k period=100k mem=20971520 swap=20971520", -997},
		{"limit only: shares from the limit", pod(req("", "", "2", "")), v1, " shares=2048 quota=200k period=100k", 999},
		{"tiny cpu: min shares, min quota", pod(req("1m", "", "1m", "")), v1, " shares=2 quota=1k period=100k", 999},
		{"huge cpu: max shares", pod(req("300", "", "", "")), v1, " shares=262144 period=100k", 999},
		{"burstable 1Gi of 10Gi", pod(req("", "1Gi", "", "2Gi")), v1, " shares=2 period=100k mem=2147483648 swap=2147483648", 900},
		{"no swap controller", pod(req("", "1Gi", "", "2Gi")), Node{MemoryCapacity: 10 * gib, MinOOMScoreAdj: -1000},
			" shares=2 period=100k mem=2147483648", 900},
		{"v2", pod(req("", "1Gi", "", "2Gi")), v2, " shares=2 period=100k mem=2147483648 memory.oom.group=1 memory.swap.max=0", 900},
		{"request near capacity", pod(req("", "10Gi", "", "")), v1, " shares=2 period=100k", 3},
		{"guaranteed, unprivileged host", pod(req("1", "1Gi", "1", "1Gi")), Node{MemoryCapacity: 10 * gib, MinOOMScoreAdj: 0},
			" shares=1024 quota=100k period=100k mem=1073741824", 0},
	} {
		r, adj := Container(tc.pod, &tc.pod.Spec.Containers[0], tc.node)
		if got := str(r); got != tc.want || adj != tc.wantAdj {
			t.Errorf("%s:\n got %q adj %d\nwant %q adj %d", tc.name, got, adj, tc.want, tc.wantAdj)
		}
	}
}

func TestContainerPodLevelLimits(t *testing.T) {
	p := pod(req("", "", "", ""), req("", "", "", "100Mi"))
	lvl := req("1", "1Gi", "2", "1Gi")
	p.Spec.Resources = &lvl
	node := Node{MemoryCapacity: 10 * gib, MinOOMScoreAdj: -1000}
	r, adj := Container(p, &p.Spec.Containers[0], node)
	// No limits of its own: the pod's; burstable with the pod's 1Gi request
	// shared out (2 containers).
	if got, want := str(r), " shares=2048 quota=200k period=100k mem=1073741824"; got != want {
		t.Errorf("first container: %q, want %q", got, want)
	}
	if want := 1000 - 1000*(gib/2)/(10*gib); adj != want {
		t.Errorf("first container adj %d, want %d", adj, want)
	}
	r, _ = Container(p, &p.Spec.Containers[1], node)
	if got, want := str(r), " shares=2048 quota=200k period=100k mem=104857600"; got != want {
		t.Errorf("second container: %q, want %q", got, want)
	}
}

func TestSidecarOOMScoreAdj(t *testing.T) {
	p := pod(req("", "2Gi", "", ""))
	p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always, Resources: req("", "", "", "")}}
	_, adj := Container(p, &p.Spec.InitContainers[0], Node{MemoryCapacity: 10 * gib, MinOOMScoreAdj: -1000})
	if adj != 800 { // no request: 1000 - 1, but never above the app container's 800
		t.Errorf("sidecar adj %d, want 800", adj)
	}
	p.Spec.PriorityClassName = "system-node-critical"
	if _, adj := Container(p, &p.Spec.Containers[0], Node{MemoryCapacity: 10 * gib, MinOOMScoreAdj: -1000}); adj != -997 {
		t.Errorf("node-critical adj %d, want -997", adj)
	}
}

func TestPod(t *testing.T) {
	sidecar := func(name string, r corev1.ResourceRequirements) corev1.Container {
		return corev1.Container{Name: name, RestartPolicy: &always, Resources: r}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"besteffort", pod(req("", "", "", "")), " shares=2"},
		{"guaranteed: sums", pod(req("500m", "64Mi", "500m", "64Mi"), req("250m", "32Mi", "250m", "32Mi")),
			" shares=768 quota=75k period=100k mem=100663296"},
		{"burstable, one without limits: shares only", pod(req("500m", "64Mi", "1", "128Mi"), req("100m", "", "", "")),
			" shares=614"},
		{"burstable, all with memory limits", pod(req("100m", "64Mi", "", "128Mi"), req("", "", "", "64Mi")),
			" shares=102 mem=201326592"},
		{"init peak above the apps", func() *corev1.Pod {
			p := pod(req("100m", "", "200m", "64Mi"))
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: req("1", "", "2", "1Gi")}}
			return p
		}(), " shares=1024 quota=200k period=100k mem=1073741824"},
		{"init without limits: no pod limits", func() *corev1.Pod {
			p := pod(req("100m", "", "200m", "64Mi"))
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: req("10m", "", "", "")}}
			return p
		}(), " shares=102"},
		{"sidecar adds to the apps", func() *corev1.Pod {
			p := pod(req("100m", "", "200m", "64Mi"))
			p.Spec.InitContainers = []corev1.Container{sidecar("s", req("100m", "", "100m", "16Mi"))}
			return p
		}(), " shares=204 quota=30k period=100k mem=83886080"},
		{"pod-level resources replace the sums", func() *corev1.Pod {
			p := pod(req("100m", "", "", ""), req("", "", "", ""))
			lvl := req("1", "256Mi", "2", "512Mi")
			p.Spec.Resources = &lvl
			return p
		}(), " shares=1024 quota=200k period=100k mem=536870912"},
		{"pod-level memory limit only", func() *corev1.Pod {
			p := pod(req("100m", "", "", ""))
			lvl := req("", "", "", "512Mi")
			p.Spec.Resources = &lvl
			return p
		}(), " shares=102 mem=536870912"},
	} {
		if got := str(Pod(tc.pod)); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestMilliCPU(t *testing.T) {
	for _, tc := range []struct {
		milli  int64
		shares uint64
		quota  int64
	}{{0, 2, 0}, {1, 2, 1000}, {9, 9, 1000}, {10, 10, 1000}, {100, 102, 10000}, {1500, 1536, 150000}, {300000, 262144, 30000000},
		{175921860444, 262144, 17592186044400}, {175921860445, 262144, 1<<44 - 1}, {math.MaxInt64, 262144, 1<<44 - 1}} {
		if s, q := MilliCPUToShares(tc.milli), MilliCPUToQuota(tc.milli); s != tc.shares || q != tc.quota {
			t.Errorf("%dm: shares %d quota %d, want %d %d", tc.milli, s, q, tc.shares, tc.quota)
		}
	}
}

// TestOverflowSaturates: quantities past what an int64 or the kernel holds
// give the largest setting, never a wrapped one (on cbe04fe memory 2^63
// gave memory.max -9223372036854775808, cpu 1e13 a wrapped quota and 2
// shares). Validation refuses such a quantity in one field; sums of
// several (the pod's cgroup) saturate.
func TestOverflowSaturates(t *testing.T) {
	node := Node{MemoryCapacity: 10 * gib, MinOOMScoreAdj: -1000}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		want    string
		wantAdj int
	}{
		{"memory 2^63", pod(req("", "9223372036854775808", "", "9223372036854775808")),
			" shares=2 period=100k mem=9223372036854775807", 3},
		{"memory 8Ei request, no limit", pod(req("", "8Ei", "", "")), " shares=2 period=100k", 3},
		{"cpu 1e13", pod(req("1e13", "", "1e13", "")), " shares=262144 quota=17592186044415 period=100k", 999},
		{"cpu request past int64 millicores", pod(req("1e17", "", "", "")), " shares=262144 period=100k", 999},
	} {
		r, adj := Container(tc.pod, &tc.pod.Spec.Containers[0], node)
		if got := str(r); got != tc.want || adj != tc.wantAdj {
			t.Errorf("%s:\n got %q adj %d\nwant %q adj %d", tc.name, got, adj, tc.want, tc.wantAdj)
		}
	}
	// Two containers at the largest limits: the pod's sums saturate.
	big := req("175921860444m", "9223372036854775807", "175921860444m", "9223372036854775807") // MaxCPULimit, MaxMemory
	if got, want := str(Pod(pod(big, big))), " shares=262144 quota=17592186044415 period=100k mem=9223372036854775807"; got != want {
		t.Errorf("pod at twice the largest limits:\n got %q\nwant %q", got, want)
	}
}
