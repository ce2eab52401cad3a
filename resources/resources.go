// Package resources turns a pod's cpu and memory requests and limits into
// cgroup settings the way the kubelet and containerd's CRI plugin do: the QoS
// class (pkg/apis/core/v1/helper/qos), each container's OCI linux.resources
// and oom_score_adj (kuberuntime generateLinuxContainerResources,
// pkg/kubelet/qos/policy.go, the CRI plugin's WithResources) and the pod
// cgroup's limits (pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod),
// with the PodLevelResources feature on. It is pure: the node's facts come
// in as a Node.
package resources

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The kernel's and the kubelet's constants (helpers_linux.go, policy.go).
const (
	minShares      = 2
	maxShares      = 262144
	sharesPerCPU   = 1024
	milliCPUToCPU  = 1000
	quotaPeriod    = 100000 // µs: 100 ms
	minQuotaPeriod = 1000   // µs: 1 ms

	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
	// sandboxOOMScoreAdj and SandboxCPUShares are what the CRI plugin gives
	// every pause container (defaultSandboxOOMAdj, defaultSandboxCPUshares).
	sandboxOOMScoreAdj = -998
	SandboxCPUShares   = 2

	// maxQuota is the largest CFS quota the kernel takes, in µs
	// (kernel/sched/core.c max_cfs_runtime: 2^44-1 µs); a larger cpu.max
	// or cfs_quota_us write fails with EINVAL.
	maxQuota = 1<<44 - 1
)

// The largest quantities podrun can turn into cgroup settings; validation
// refuses larger ones (manifest), and sums of several (the pod's cgroup)
// saturate at them.
var (
	// MaxMemory is the largest memory request or limit: memory.max and the
	// OCI memory limit are int64 bytes (8Ei - 1).
	MaxMemory = *resource.NewQuantity(math.MaxInt64, resource.BinarySI)
	// MaxCPULimit is the largest cpu limit: its quota over the 100 ms
	// period is the kernel's largest (maxQuota), 175921860444m.
	MaxCPULimit = *resource.NewMilliQuantity(maxQuota*milliCPUToCPU/quotaPeriod, resource.DecimalSI)
	// MaxCPURequest is the largest cpu request: its millicores times the
	// shares per cpu fit an int64, 9007199254740991m (such a request gets
	// the most shares, 262144, as any request over 256 cpus does).
	MaxCPURequest = *resource.NewMilliQuantity(math.MaxInt64/sharesPerCPU, resource.DecimalSI)
)

// NodeCriticalPriorityClass makes a static pod node-critical (kubelet
// types.IsNodeCriticalPod; every podrun pod is a static pod): its containers
// get the Guaranteed oom_score_adj. Refused under a --policy (manifest).
const NodeCriticalPriorityClass = "system-node-critical"

// Node is what podrun knows of the machine.
type Node struct {
	// MemoryCapacity is the machine's memory in bytes (MemTotal), the
	// kubelet's machineInfo.MemoryCapacity.
	MemoryCapacity int64
	// CgroupV2 is true on a unified (cgroup v2 only) host.
	CgroupV2 bool
	// SwapController is true when the memory controller accounts swap
	// (memory.memsw.* on v1, memory.swap.max on v2).
	SwapController bool
	// MinOOMScoreAdj is the lowest oom_score_adj podrun may give a process:
	// -1000 with CAP_SYS_RESOURCE, else podrun's own, which lower values are
	// clamped to (containerd's restrict_oom_score_adj, for the same reason).
	MinOOMScoreAdj int
}

// QOSClass is the pod's QoS class as the kubelet computes it (ComputePodQOS):
// from the pod-level resources when set, else from every init and app
// container's cpu and memory requests and limits.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Spec.Resources != nil {
		return requirementsQOS(pod.Spec.Resources)
	}
	var qos corev1.PodQOSClass
	for _, c := range Containers(pod) {
		switch q := requirementsQOS(&c.Resources); {
		case q == corev1.PodQOSBurstable:
			return q
		case qos == "":
			qos = q
		case qos != q: // one BestEffort, one Guaranteed
			return corev1.PodQOSBurstable
		}
	}
	if qos == "" {
		return corev1.PodQOSBestEffort
	}
	return qos
}

// requirementsQOS is the class of one set of requirements (resourceQOS).
func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var qos corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		if !req.Equal(lim) {
			return corev1.PodQOSBurstable
		}
		bestEffort := req.IsZero()
		switch {
		case qos == "" && bestEffort:
			qos = corev1.PodQOSBestEffort
		case qos == "":
			qos = corev1.PodQOSGuaranteed
		case bestEffort != (qos == corev1.PodQOSBestEffort):
			return corev1.PodQOSBurstable
		}
	}
	return qos
}

// Container returns the linux.resources and the oom_score_adj of container c
// of pod: cpu shares from the request (from the limit when there is no
// request), a CFS quota from the limit over a 100 ms period, the memory
// limit, no swap, and on cgroup v2 memory.oom.group so that an OOM kill ends
// the whole container. An unset cpu or memory limit falls back to the
// pod-level one.
func Container(pod *corev1.Pod, c *corev1.Container, node Node) (*specs.LinuxResources, int) {
	cpuLimit := containerLimit(pod, c, corev1.ResourceCPU)
	mem := containerLimit(pod, c, corev1.ResourceMemory)
	memLimit := Bytes(mem)
	cpuMilli := Milli(cpuLimit)
	if req, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		cpuMilli = Milli(req)
	}
	shares := MilliCPUToShares(cpuMilli)
	period := uint64(quotaPeriod)
	r := &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares, Period: &period}}
	if q := MilliCPUToQuota(Milli(cpuLimit)); q != 0 {
		r.CPU.Quota = &q
	}
	if memLimit != 0 {
		r.Memory = &specs.LinuxMemory{Limit: &memLimit}
		if node.SwapController && !node.CgroupV2 {
			// memory+swap equal to memory: no swap (the kubelet's NoSwap).
			swap := memLimit
			r.Memory.Swap = &swap
		}
	}
	if node.CgroupV2 {
		r.Unified = map[string]string{"memory.oom.group": "1"}
		if node.SwapController {
			r.Unified["memory.swap.max"] = "0"
		}
	}
	return r, max(oomScoreAdj(pod, c, node.MemoryCapacity), node.MinOOMScoreAdj)
}

// CPULimitMilli is container c's CPU limit in millicores, the pod-level
// one when it sets none; 0 when there is none.
func CPULimitMilli(pod *corev1.Pod, c *corev1.Container) int64 {
	l := containerLimit(pod, c, corev1.ResourceCPU)
	return l.MilliValue()
}

// containerLimit is the container's limit of name, or the pod-level one when
// the container sets none (kuberuntime getCPULimit, getMemoryLimit).
func containerLimit(pod *corev1.Pod, c *corev1.Container, name corev1.ResourceName) resource.Quantity {
	lim := c.Resources.Limits[name]
	if lim.IsZero() && podLevelSet(pod) {
		return pod.Spec.Resources.Limits[name]
	}
	return lim
}

// SandboxOOMScoreAdj returns the pause container's oom_score_adj on node.
func SandboxOOMScoreAdj(node Node) int {
	return max(sandboxOOMScoreAdj, node.MinOOMScoreAdj)
}

// MilliCPUToShares converts millicores to CFS shares, between 2 and 262144.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return minShares
	}
	if milliCPU > maxShares*milliCPUToCPU/sharesPerCPU {
		return maxShares // and milliCPU*sharesPerCPU may not fit an int64
	}
	shares := milliCPU * sharesPerCPU / milliCPUToCPU
	return uint64(min(max(shares, minShares), maxShares))
}

// MilliCPUToQuota converts millicores to a CFS quota over the 100 ms
// period, at least 1 ms and at most the kernel's largest; 0 means no quota.
func MilliCPUToQuota(milliCPU int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	if milliCPU > maxQuota*milliCPUToCPU/quotaPeriod {
		return maxQuota // and milliCPU*quotaPeriod may not fit an int64
	}
	return max(milliCPU*quotaPeriod/milliCPUToCPU, minQuotaPeriod)
}

// Bytes is q in bytes (in units, for a quantity of something else),
// rounded up, at most math.MaxInt64 (Quantity.Value wraps past it: 8Ei
// would be -8Ei).
func Bytes(q resource.Quantity) int64 {
	if q.Cmp(MaxMemory) > 0 {
		return math.MaxInt64
	}
	return q.Value()
}

// Milli is q in thousandths, rounded up, at most math.MaxInt64
// (Quantity.MilliValue wraps past it).
func Milli(q resource.Quantity) int64 {
	if q.Cmp(maxMilli) > 0 {
		return math.MaxInt64
	}
	return q.MilliValue()
}

// maxMilli is the largest quantity whose MilliValue fits an int64.
var maxMilli = *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)

// oomScoreAdj is the kubelet's GetContainerOOMScoreAdjust.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int {
	if pod.Spec.PriorityClassName == NodeCriticalPriorityClass {
		return guaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return bestEffortOOMScoreAdj - 1
	}
	// Burstable: 1000 minus the container's share of the memory in
	// per-mille, so that a container using more than it requested is killed
	// first. Pod-level requests not given to any container are shared out
	// equally.
	var extra int64
	if podLevelRequestsSet(pod) {
		extra = remainingPodMemoryPerContainer(pod)
	}
	adj := 1000 - perMille(Bytes(*c.Resources.Requests.Memory()), extra, memoryCapacity)
	if isSidecar(pod, c) {
		// A sidecar is killed no sooner than the regular containers.
		adj = min(adj, 1000-perMille(minRegularMemoryRequest(pod), extra, memoryCapacity))
	}
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		return 1000 + guaranteedOOMScoreAdj
	case adj == bestEffortOOMScoreAdj:
		return bestEffortOOMScoreAdj - 1
	}
	return int(adj)
}

// perMille is request+extra in thousandths of capacity; more than all of
// it counts as all of it (the adj is at its floor either way), so that
// 1000 times it cannot overflow.
func perMille(request, extra, capacity int64) int64 {
	if request > capacity || extra > capacity-request {
		return 1000
	}
	return 1000 * (request + extra) / capacity
}

// remainingPodMemoryPerContainer shares the pod-level memory request that
// the containers do not request among all of them.
func remainingPodMemoryPerContainer(pod *corev1.Pod) int64 {
	podReq := pod.Spec.Resources.Requests.Memory()
	if podReq.IsZero() {
		return 0
	}
	reqs := ContainerRequests(pod)
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	return max(Bytes(*podReq)-Bytes(*reqs.Memory()), 0) / n
}

func minRegularMemoryRequest(pod *corev1.Pod) int64 {
	m := Bytes(*pod.Spec.Containers[0].Resources.Requests.Memory())
	for _, c := range pod.Spec.Containers[1:] {
		m = min(m, Bytes(*c.Resources.Requests.Memory()))
	}
	return m
}

func isSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		return false
	}
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name == c.Name {
			return true
		}
	}
	return false
}

// Pod returns the limits of the pod's cgroup (ResourceConfigForPod): cpu
// shares from the sum of the requests; a CFS quota from the sum of the cpu
// limits and a memory limit from the sum of the memory limits, each only
// when every container has that limit (or the pod-level resources set it).
// Init containers count with their peak (each one plus the native sidecars
// started before it); pod-level resources replace the sums. A BestEffort pod
// gets the minimum shares and nothing else.
func Pod(pod *corev1.Pod) *specs.LinuxResources {
	cpuDeclared, memDeclared := true, true
	declared := func(l corev1.ResourceList) {
		cpuDeclared = cpuDeclared && !l.Cpu().IsZero()
		memDeclared = memDeclared && !l.Memory().IsZero()
	}
	reqs := ContainerRequests(pod)
	limits := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }, declared)
	if podLevelSet(pod) {
		for name, q := range pod.Spec.Resources.Requests {
			reqs[name] = q
		}
		for name, q := range pod.Spec.Resources.Limits {
			limits[name] = q
		}
		cpuDeclared = cpuDeclared || !pod.Spec.Resources.Limits.Cpu().IsZero()
		memDeclared = memDeclared || !pod.Spec.Resources.Limits.Memory().IsZero()
	}
	shares := MilliCPUToShares(Milli(*reqs.Cpu()))
	r := &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}
	qos := QOSClass(pod)
	if qos == corev1.PodQOSBestEffort {
		return r
	}
	if cpuDeclared || qos == corev1.PodQOSGuaranteed {
		quota, period := MilliCPUToQuota(Milli(*limits.Cpu())), uint64(quotaPeriod)
		r.CPU.Quota, r.CPU.Period = &quota, &period
	}
	if memDeclared || qos == corev1.PodQOSGuaranteed {
		mem := Bytes(*limits.Memory())
		r.Memory = &specs.LinuxMemory{Limit: &mem}
	}
	return r
}

// ContainerRequests is the containers' aggregate request (component-helpers'
// AggregateContainerRequests): the app containers and native sidecars
// together, or an init container's peak when that is more.
func ContainerRequests(pod *corev1.Pod) corev1.ResourceList {
	return aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }, nil)
}

// aggregate sums list over the app containers and native sidecars and takes
// the maximum with each init container's peak (itself plus the sidecars
// before it): component-helpers' AggregateContainerRequests and
// AggregateContainerLimits. each, when set, sees every app container's list
// and every init container's peak.
func aggregate(pod *corev1.Pod, list func(*corev1.Container) corev1.ResourceList, each func(corev1.ResourceList)) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		l := list(&pod.Spec.Containers[i])
		if each != nil {
			each(l)
		}
		add(sum, l)
	}
	sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		peak := corev1.ResourceList{}
		if isSidecar(pod, c) {
			add(sum, list(c))
			add(sidecars, list(c))
			add(peak, sidecars)
		} else {
			add(peak, list(c))
			add(peak, sidecars)
		}
		if each != nil {
			each(peak)
		}
		maxInto(initPeak, peak)
	}
	maxInto(sum, initPeak)
	return sum
}

func add(to, l corev1.ResourceList) {
	for name, q := range l {
		v := to[name]
		v.Add(q)
		to[name] = v
	}
}

func maxInto(to, l corev1.ResourceList) {
	for name, q := range l {
		if v, ok := to[name]; !ok || q.Cmp(v) > 0 {
			to[name] = q.DeepCopy()
		}
	}
}

// podLevelSet reports whether spec.resources sets cpu or memory
// (IsPodLevelResourcesSet; validation rejects every other resource).
func podLevelSet(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

func podLevelRequestsSet(pod *corev1.Pod) bool {
	return pod.Spec.Resources != nil && len(pod.Spec.Resources.Requests) > 0
}

// Containers lists the init containers, then the app containers.
func Containers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}
