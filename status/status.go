// Package status computes a pod's Kubernetes status (phase, conditions,
// container statuses) from what the runtime reports. It is pure: the
// kubelet's rules (pkg/kubelet/kubelet_pods.go getPhase), no I/O.
package status

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/resources"
)

// Observed is what is known of a pod on the node.
type Observed struct {
	Sandbox    *engine.Container             // the pause container, when it exists
	Containers map[string][]engine.Container // by container name, every attempt kept
	PodIPs     []string
	HostIP     string
	Created    time.Time   // when the pod was first set up (PodScheduled)
	Ended      *Ended      // the pod was ended by its node (evicted), not by its containers
	ImageWait  *ImageWait  // the image failure the pod waits on
	ConfigWait *ConfigWait // the container the pod could not create
	// Messages are the termination messages of attempts that ended, by
	// container id.
	Messages map[string]string
}

// Ended is a pod ended by the node, as the kubelet's eviction manager does:
// phase Failed with this reason and message.
type Ended struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ImageWait is an image that could not be made present: the containers
// that use it and have not run wait with this reason (ErrImagePull,
// ImagePullBackOff, ErrImageNeverPull, InvalidImageName) and message.
type ImageWait struct {
	Image   string `json:"image"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ConfigWait is a container that could not be created from its
// configuration (runAsNonRoot with a root image, a subPathExpr that
// expands to an absolute path): it waits with this reason
// (CreateContainerConfigError) and message, the pod Pending, as the
// kubelet shows it while it tries again.
type ConfigWait struct {
	Container string `json:"container"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// Latest returns the attempt with the highest restart count.
func Latest(attempts []engine.Container) *engine.Container {
	var best *engine.Container
	for i := range attempts {
		if best == nil || RestartCount(attempts[i]) > RestartCount(*best) {
			best = &attempts[i]
		}
	}
	return best
}

// RestartCount reads the restart-count label (0 when absent).
func RestartCount(c engine.Container) int32 {
	n, _ := strconv.Atoi(c.Labels[labels.RestartCount])
	return int32(n)
}

func labelTime(c engine.Container, key string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, c.Labels[key])
	return t, err == nil
}

func startedAt(c engine.Container) metav1.Time {
	if t, ok := labelTime(c, labels.StartedAt); ok {
		return metav1.NewTime(t)
	}
	return metav1.NewTime(c.CreatedAt)
}

// ContainerStatus is one container's status from its attempts; waiting is
// the reason used when there is no attempt yet, messages the termination
// messages of attempts that ended (by container id).
//
// As the kubelet's convertToAPIContainerStatuses (pkg/kubelet/kubelet_pods.go)
// reports it: a container not yet created shows its image as the spec
// writes it, a created one the runtime's normalised reference, its
// resources (the allocated ones: the spec's, `{}` when it has none) and
// allocatedResources (the spec's requests); every one its volume mounts.
func ContainerStatus(c *corev1.Container, attempts []engine.Container, waiting string, messages map[string]string) corev1.ContainerStatus {
	st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: boolPtr(false), VolumeMounts: volumeMounts(c)}
	cur := Latest(attempts)
	if cur == nil {
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		return st
	}
	if hookRunning(*cur) {
		// The kubelet runs postStart inside its sync of the pod, whose
		// status it took before it started the container: until the hook
		// returns, the container shows as it was (ContainerCreating, or the
		// attempt before waiting to restart, with its restart count), not
		// running, started or ready ("if a PostStart hook hangs, the
		// container cannot reach a running state").
		return ContainerStatus(c, without(attempts, cur.ID), waiting, messages)
	}
	st.Image = imageName(c.Image)
	st.Resources = c.Resources.DeepCopy()
	if c.Resources.Requests != nil {
		st.AllocatedResources = c.Resources.Requests.DeepCopy()
	}
	st.ContainerID = "containerd://" + cur.ID
	st.ImageID = cur.Labels[labels.ImageID]
	st.User = user(cur.Labels[labels.User])
	st.RestartCount = RestartCount(*cur)
	st.State = state(*cur, messages)
	if st.State.Terminated != nil && cur.Labels[labels.Waiting] != "" {
		// Exited, and its supervisor will restart it after a back-off, or
		// could not make the next attempt (CreateContainerConfigError).
		st.LastTerminationState = st.State
		msg := cur.Labels[labels.WaitingMessage]
		if msg == "" {
			msg = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", cur.Labels[labels.Backoff],
				c.Name, cur.Labels[labels.PodName], cur.Labels[labels.PodNamespace], cur.Labels[labels.PodUID])
		}
		st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: cur.Labels[labels.Waiting], Message: msg}}
		return st
	}
	running := st.State.Running != nil
	started := running && (c.StartupProbe == nil || cur.Labels[labels.Started] == "true")
	st.Started = boolPtr(started)
	st.Ready = started && (c.ReadinessProbe == nil || cur.Labels[labels.Ready] == "true")
	if st.State.Terminated != nil {
		// The kubelet keeps one exited container per name (its
		// podContainerDeletor removes older ones when a container dies), and
		// lastState comes from the attempt before the newest it has: an
		// exited container not restarted again has none.
		return st
	}
	for i := range attempts {
		if RestartCount(attempts[i]) == st.RestartCount-1 {
			st.LastTerminationState = state(attempts[i], messages)
		}
	}
	return st
}

// hookRunning reports whether attempt a runs and its postStart hook has
// not returned yet.
func hookRunning(a engine.Container) bool {
	running := a.Task.State == engine.TaskRunning || a.Task.State == engine.TaskPaused
	return running && a.Labels[labels.PostStart] == labels.PostStartRunning
}

// without is attempts but the one of id.
func without(attempts []engine.Container, id string) []engine.Container {
	var out []engine.Container
	for _, a := range attempts {
		if a.ID != id {
			out = append(out, a)
		}
	}
	return out
}

// volumeMounts are the container's mounts as the kubelet reports them
// (RecursiveReadOnlyMounts, GA in 1.33): name, path and readOnly; a
// read-only one's recursiveReadOnly Disabled, as podrun accepts no
// recursiveReadOnly and so never resolves one to Enabled.
func volumeMounts(c *corev1.Container) []corev1.VolumeMountStatus {
	var out []corev1.VolumeMountStatus
	for _, m := range c.VolumeMounts {
		vs := corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			disabled := corev1.RecursiveReadOnlyDisabled
			vs.RecursiveReadOnly = &disabled
		}
		out = append(out, vs)
	}
	return out
}

// imageName is an image reference as the kubelet reports it through
// containerd's CRI: normalized the Docker way (busybox:1.28 ->
// docker.io/library/busybox:1.28, nginx -> docker.io/library/nginx:latest).
func imageName(ref string) string {
	n, err := reference.ParseDockerRef(ref)
	if err != nil {
		return ref
	}
	return n.String()
}

func state(c engine.Container, messages map[string]string) corev1.ContainerState {
	// A task left behind by a start that failed (its delete failed too)
	// never ran: its labels say how the attempt ended.
	if c.Task.State == engine.TaskNone || c.Labels[labels.Reason] == ReasonStartError {
		if code, err := strconv.Atoi(c.Labels[labels.ExitCode]); err == nil {
			finished, _ := labelTime(c, labels.FinishedAt)
			c.Task = engine.Task{State: engine.TaskStopped, ExitCode: uint32(code), ExitedAt: finished}
		}
	}
	switch c.Task.State {
	case engine.TaskRunning, engine.TaskPaused:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt(c)}}
	case engine.TaskStopped:
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:    int32(c.Task.ExitCode),
			Reason:      terminatedReason(c.Task.ExitCode, c.Labels[labels.Reason]),
			StartedAt:   startedAt(c),
			FinishedAt:  metav1.NewTime(c.Task.ExitedAt),
			ContainerID: "containerd://" + c.ID,
			Message:     cmp.Or(messages[c.ID], c.Labels[labels.Message]),
		}}
	default:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
}

// ReasonPostStartHookError is the waiting reason of a container killed
// because its postStart hook failed, until it is restarted or found in
// back-off (the kubelet's ErrPostStartHook, from its reason cache).
const ReasonPostStartHookError = "PostStartHookError"

// ReasonOOMKilled is the terminated reason of a container in which the
// kernel's OOM killer killed a process.
const ReasonOOMKilled = "OOMKilled"

// A container that was made but could not be started: terminated with
// ReasonStartError and StartErrorCode (containerd CRI's), waiting
// ReasonRunContainerError until the kubelet's next sync of the pod finds it
// in back-off (the kubelet's ErrRunContainer).
const (
	ReasonStartError        = "StartError"
	StartErrorCode          = 128
	ReasonRunContainerError = "RunContainerError"
)

// terminatedReason is the CRI plugin's: a recorded reason (OOMKilled) wins
// over the exit code, whatever the code.
func terminatedReason(code uint32, recorded string) string {
	switch {
	case recorded != "":
		return recorded
	case code == 0:
		return "Completed"
	}
	return "Error"
}

func boolPtr(b bool) *bool { return &b }

// IsSidecar reports whether an init container is a native sidecar.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Compute returns the pod's status.
func Compute(pod *corev1.Pod, o Observed) corev1.PodStatus {
	var st corev1.PodStatus
	initDone, initFailed := true, false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := ContainerStatus(c, o.Containers[c.Name], "PodInitializing", o.Messages)
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		if IsSidecar(c) {
			initDone = initDone && cs.Started != nil && *cs.Started
			continue
		}
		t := cs.State.Terminated
		// A completed init container is ready, as the kubelet reports it.
		cs.Ready = t != nil && t.ExitCode == 0
		st.InitContainerStatuses[len(st.InitContainerStatuses)-1].Ready = cs.Ready
		if t == nil || t.ExitCode != 0 {
			initDone = false
		}
		if t != nil && t.ExitCode != 0 {
			initFailed = true
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		reason := "ContainerCreating"
		if !initDone {
			reason = "PodInitializing"
		}
		st.ContainerStatuses = append(st.ContainerStatuses, ContainerStatus(c, o.Containers[c.Name], reason, o.Messages))
	}
	if w := o.ImageWait; w != nil {
		imageWaiting(pod.Spec.InitContainers, st.InitContainerStatuses, w)
		imageWaiting(pod.Spec.Containers, st.ContainerStatuses, w)
	}
	if w := o.ConfigWait; w != nil {
		configWaiting(st.InitContainerStatuses, w)
		configWaiting(st.ContainerStatuses, w)
	}
	trimMessages(pod, &st)
	st.Phase = Phase(pod.Spec.RestartPolicy, initDone, initFailed, st.ContainerStatuses)
	if o.Ended != nil {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, o.Ended.Reason, o.Ended.Message
	}
	for _, ip := range o.PodIPs {
		st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(o.PodIPs) > 0 {
		st.PodIP = o.PodIPs[0]
	}
	st.HostIP = o.HostIP
	if st.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	}
	if o.Sandbox != nil {
		t := metav1.NewTime(o.Sandbox.CreatedAt)
		st.StartTime = &t
	}
	st.Conditions = conditions(pod, o, st)
	st.QOSClass = resources.QOSClass(pod)
	st.Resources, st.AllocatedResources = podResources(pod)
	return st
}

// podResources are the pod-level status.resources and
// status.allocatedResources, as the kubelet v1.37 reports them
// (InPlacePodLevelResourcesVerticalScaling, on by default; PodLevelResources
// on): allocated, the pod's requests (its containers' and overhead, or its
// pod-level requests), omitted when none; resources, the pod-level
// resources of the spec with those requests and the pod's limits
// (getEffectiveAllocatedResources). The kubelet reads a running pod's back
// from its cgroup; podrun gives the spec's, as for its containers
// (docs/fields.md).
func podResources(pod *corev1.Pod) (*corev1.ResourceRequirements, corev1.ResourceList) {
	var opts resourcehelper.PodResourcesOptions
	r := pod.Spec.Resources.DeepCopy()
	if r == nil {
		r = &corev1.ResourceRequirements{}
	}
	r.Requests = resourcehelper.PodRequests(pod, opts)
	r.Limits = resourcehelper.PodLimits(pod, opts)
	var allocated corev1.ResourceList
	if len(r.Requests) > 0 {
		allocated = r.Requests.DeepCopy()
	}
	if len(r.Requests) == 0 {
		r.Requests = nil
	}
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
	return r, allocated
}

// imageWaiting gives the containers on w's image that never ran w's reason
// and message, as the kubelet shows an image it could not pull.
func imageWaiting(ctrs []corev1.Container, sts []corev1.ContainerStatus, w *ImageWait) {
	for i := range sts {
		if ctrs[i].Image == w.Image && sts[i].ContainerID == "" {
			sts[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		}
	}
}

// configWaiting gives w's container, if it was never created, w's reason
// and message.
func configWaiting(sts []corev1.ContainerStatus, w *ConfigWait) {
	for i := range sts {
		if sts[i].Name == w.Container && sts[i].ContainerID == "" {
			sts[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		}
	}
}

// Phase applies the kubelet's getPhase rules.
func Phase(policy corev1.RestartPolicy, initDone, initFailed bool, cs []corev1.ContainerStatus) corev1.PodPhase {
	if initFailed && policy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	if !initDone {
		return corev1.PodPending
	}
	var waiting, running, stopped, succeeded int
	for _, s := range cs {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		if policy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// The kubelet's condition reasons (pkg/kubelet/status/generate.go).
const (
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonPodCompleted             = "PodCompleted"
	reasonSandboxNotReady          = "PodSandboxNotReady"
	messageNoSandbox               = "no pod sandbox exists"
	messageSandboxNotReady         = "pod sandbox is not ready"
	reasonPodFailed                = "PodFailed"
)

// conditions are the kubelet's pod conditions, word for word and in its
// order (generateAPIPodStatus): PodReadyToStartContainers, Initialized,
// Ready, ContainersReady, PodScheduled. Transition times: the pod's
// creation, the sandbox's (a finished pod's: its last container's finish),
// the last init container's finish, and the
// latest readiness change of its containers.
func conditions(pod *corev1.Pod, o Observed, st corev1.PodStatus) []corev1.PodCondition {
	created := metav1.NewTime(o.Created)
	initAt, readyAt, endAt := created, created, created
	for _, attempts := range o.Containers {
		for _, a := range attempts {
			if hookRunning(a) {
				continue // not running yet, as far as the pod's status goes
			}
			t, ok := labelTime(a, labels.FinishedAt)
			if ok && a.Labels[labels.Kind] == labels.KindInit && t.After(initAt.Time) {
				initAt = metav1.NewTime(t)
			}
			if ok && t.After(endAt.Time) {
				endAt = metav1.NewTime(t)
			}
			for _, key := range []string{labels.ReadyAt, labels.StartedAt} {
				if t, ok := labelTime(a, key); ok && t.After(readyAt.Time) && a.Labels[labels.Kind] == labels.KindApp {
					readyAt = metav1.NewTime(t)
				}
			}
		}
	}
	// False with the kubelet's reason and why (runtimeutil.PodSandboxChanged).
	sandbox := corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: created,
		Reason: reasonSandboxNotReady, Message: messageNoSandbox}
	switch {
	case st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed:
		// The kubelet stops a finished pod's sandbox (SyncTerminatingPod),
		// so GeneratePodReadyToStartContainersCondition finds none ready,
		// whether or not podrun's pause container still runs.
		sandbox.LastTransitionTime, sandbox.Message = endAt, messageSandboxNotReady
	case o.Sandbox != nil && o.Sandbox.Task.State == engine.TaskRunning:
		sandbox = corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(o.Sandbox.CreatedAt)}
	case o.Sandbox != nil:
		sandbox.Message = messageSandboxNotReady
	}
	initialized := initializedCondition(pod, st)
	initialized.LastTransitionTime = initAt
	containersReady := containersReadyCondition(pod, st)
	containersReady.LastTransitionTime = readyAt
	ready := containersReady // Ready follows ContainersReady (podrun has no readiness gates)
	ready.Type = corev1.PodReady
	return []corev1.PodCondition{
		sandbox, initialized, ready, containersReady,
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
	}
}

// initializedCondition is the kubelet's GeneratePodInitializedCondition.
func initializedCondition(pod *corev1.Pod, st corev1.PodStatus) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if st.Phase == corev1.PodSucceeded {
		c.Reason = reasonPodCompleted
		return c
	}
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return c // a regular container has started: initialized before (sidecars may be restarting)
		}
	}
	var incomplete []string
	for i, ic := range pod.Spec.InitContainers {
		cs := st.InitContainerStatuses[i]
		if IsSidecar(&ic) && (cs.Started == nil || !*cs.Started) || !IsSidecar(&ic) && !cs.Ready {
			incomplete = append(incomplete, ic.Name)
		}
	}
	if len(incomplete) > 0 {
		c.Status, c.Reason = corev1.ConditionFalse, reasonContainersNotInitialized
		c.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	return c
}

// containersReadyCondition is the kubelet's
// GenerateContainersReadyCondition: native sidecars and app containers
// must be ready; a finished pod's is False with PodCompleted or PodFailed.
func containersReadyCondition(pod *corev1.Pod, st corev1.PodStatus) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}
	switch st.Phase {
	case corev1.PodSucceeded:
		c.Reason = reasonPodCompleted
		return c
	case corev1.PodFailed:
		c.Reason = reasonPodFailed
		return c
	}
	var unready []string
	for i, ic := range pod.Spec.InitContainers {
		if IsSidecar(&ic) && !st.InitContainerStatuses[i].Ready {
			unready = append(unready, ic.Name)
		}
	}
	for i, ac := range pod.Spec.Containers {
		if !st.ContainerStatuses[i].Ready {
			unready = append(unready, ac.Name)
		}
	}
	if len(unready) > 0 {
		c.Reason, c.Message = reasonContainersNotReady, fmt.Sprintf("containers with unready status: %s", unready)
		return c
	}
	c.Status = corev1.ConditionTrue
	return c
}

// Reason is the one-word STATUS kubectl get pods shows: the phase, or a
// waiting/terminated reason, or Init:N/M while initializing.
func Reason(pod *corev1.Pod, st corev1.PodStatus) string {
	for i, s := range st.InitContainerStatuses {
		switch {
		case IsSidecar(&pod.Spec.InitContainers[i]) && s.Started != nil && *s.Started:
			continue
		case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
			continue
		case s.State.Terminated != nil:
			return "Init:" + s.State.Terminated.Reason
		case s.State.Waiting != nil && s.State.Waiting.Reason != "" && s.State.Waiting.Reason != "PodInitializing":
			return "Init:" + s.State.Waiting.Reason
		default:
			return "Init:" + strconv.Itoa(i) + "/" + strconv.Itoa(len(pod.Spec.InitContainers))
		}
	}
	if st.Phase == corev1.PodFailed && st.Reason != "" {
		// Ended by the node (Evicted): that, not the killed containers' Error.
		return st.Reason
	}
	reason := string(st.Phase)
	// Last to first, as kubectl: the first container's reason wins.
	for i := len(st.ContainerStatuses) - 1; i >= 0; i-- {
		s := st.ContainerStatuses[i]
		switch {
		case s.State.Waiting != nil && s.State.Waiting.Reason != "":
			reason = s.State.Waiting.Reason
		case s.State.Terminated != nil && s.State.Terminated.Reason != "" && st.Phase != corev1.PodRunning:
			reason = s.State.Terminated.Reason
		}
	}
	return reason
}

// maxPodTerminationMessages bounds a pod's termination messages together
// (kubecontainer.MaxPodTerminationMessageLogLength).
const maxPodTerminationMessages = 12 << 10

// trimMessages shares the pod's budget for termination messages among its
// containers and cuts each message (state and lastState) to its share, as
// the kubelet's status manager does (normalizeStatus).
func trimMessages(pod *corev1.Pod, st *corev1.PodStatus) {
	share := maxPodTerminationMessages
	if n := len(pod.Spec.InitContainers) + len(pod.Spec.Containers); n > 0 {
		share /= n
	}
	trim := func(s *corev1.ContainerState) {
		if t := s.Terminated; t != nil && len(t.Message) > share {
			t.Message = t.Message[:share]
		}
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			trim(&list[i].State)
			trim(&list[i].LastTerminationState)
		}
	}
}

// UserLabel records the identity a container's process runs with.
func UserLabel(uid, gid uint32, groups []uint32) string {
	gs := make([]string, len(groups))
	for i, g := range groups {
		gs[i] = strconv.FormatUint(uint64(g), 10)
	}
	return fmt.Sprintf("%d:%d:%s", uid, gid, strings.Join(gs, ","))
}

// user is the status's user.linux, as containerd's CRI reports the
// process's identity (uid, gid, supplemental groups); nil without a label.
func user(label string) *corev1.ContainerUser {
	parts := strings.SplitN(label, ":", 3)
	if len(parts) != 3 {
		return nil
	}
	uid, err1 := strconv.ParseInt(parts[0], 10, 64)
	gid, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil
	}
	u := &corev1.LinuxContainerUser{UID: uid, GID: gid}
	for _, g := range strings.Split(parts[2], ",") {
		if n, err := strconv.ParseInt(g, 10, 64); err == nil {
			u.SupplementalGroups = append(u.SupplementalGroups, n)
		}
	}
	return &corev1.ContainerUser{Linux: u}
}
