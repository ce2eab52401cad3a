// Package status computes a pod's Kubernetes status (phase, conditions,
// container statuses) from what the runtime reports. It is pure: the
// kubelet's rules (pkg/kubelet/kubelet_pods.go getPhase), no I/O.
package status

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
)

// Observed is what is known of a pod on the node.
type Observed struct {
	Sandbox    *engine.Container             // the pause container; nil when absent or hostNetwork-less pods never got one
	Containers map[string][]engine.Container // by container name, every attempt
	PodIPs     []string
	HostIP     string
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

func startedAt(c engine.Container) metav1.Time {
	if t, err := time.Parse(time.RFC3339Nano, c.Labels[labels.StartedAt]); err == nil {
		return metav1.NewTime(t)
	}
	return metav1.NewTime(c.CreatedAt)
}

// ContainerStatus is one container's status from its attempts; waiting is
// the reason used when there is no attempt yet.
func ContainerStatus(c *corev1.Container, attempts []engine.Container, waiting string) corev1.ContainerStatus {
	st := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	cur := Latest(attempts)
	if cur == nil {
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		return st
	}
	st.ContainerID = "containerd://" + cur.ID
	st.RestartCount = RestartCount(*cur)
	st.State = state(*cur)
	st.Started = boolPtr(st.State.Running != nil)
	st.Ready = st.State.Running != nil
	for i := range attempts {
		if RestartCount(attempts[i]) == st.RestartCount-1 {
			st.LastTerminationState = state(attempts[i])
		}
	}
	return st
}

func state(c engine.Container) corev1.ContainerState {
	if c.Task.State == engine.TaskNone {
		if code, err := strconv.Atoi(c.Labels[labels.ExitCode]); err == nil {
			finished, _ := time.Parse(time.RFC3339Nano, c.Labels[labels.FinishedAt])
			c.Task = engine.Task{State: engine.TaskStopped, ExitCode: uint32(code), ExitedAt: finished}
		}
	}
	switch c.Task.State {
	case engine.TaskRunning, engine.TaskPaused:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt(c)}}
	case engine.TaskStopped:
		reason := "Completed"
		if c.Task.ExitCode != 0 {
			reason = "Error"
		}
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:    int32(c.Task.ExitCode),
			Reason:      reason,
			StartedAt:   startedAt(c),
			FinishedAt:  metav1.NewTime(c.Task.ExitedAt),
			ContainerID: "containerd://" + c.ID,
		}}
	default:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
}

func boolPtr(b bool) *bool { return &b }

// Compute returns the pod's status.
func Compute(pod *corev1.Pod, o Observed) corev1.PodStatus {
	var st corev1.PodStatus
	initDone := true
	initFailed := false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		reason := "PodInitializing"
		cs := ContainerStatus(c, o.Containers[c.Name], reason)
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		t := cs.State.Terminated
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
		st.ContainerStatuses = append(st.ContainerStatuses, ContainerStatus(c, o.Containers[c.Name], reason))
	}
	st.Phase = Phase(pod.Spec.RestartPolicy, initDone, initFailed, st.ContainerStatuses)
	for _, ip := range o.PodIPs {
		st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(o.PodIPs) > 0 {
		st.PodIP = o.PodIPs[0]
	}
	st.HostIP = o.HostIP
	if o.Sandbox != nil {
		t := metav1.NewTime(o.Sandbox.CreatedAt)
		st.StartTime = &t
	}
	st.Conditions = conditions(initDone, st.ContainerStatuses)
	return st
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

func conditions(initDone bool, cs []corev1.ContainerStatus) []corev1.PodCondition {
	ready := len(cs) > 0
	for _, s := range cs {
		ready = ready && s.Ready
	}
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s}
	}
	return []corev1.PodCondition{
		cond(corev1.PodScheduled, true),
		cond(corev1.PodInitialized, initDone),
		cond(corev1.ContainersReady, ready),
		cond(corev1.PodReady, ready),
	}
}

// Reason is the one-word STATUS kubectl get pods shows: the phase, or a
// waiting/terminated reason, or Init:N/M while initializing.
func Reason(pod *corev1.Pod, st corev1.PodStatus) string {
	for i, s := range st.InitContainerStatuses {
		switch {
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
	reason := string(st.Phase)
	for _, s := range st.ContainerStatuses {
		switch {
		case s.State.Waiting != nil && s.State.Waiting.Reason != "":
			reason = s.State.Waiting.Reason
		case s.State.Terminated != nil && s.State.Terminated.Reason != "" && st.Phase != corev1.PodRunning:
			reason = s.State.Terminated.Reason
		}
	}
	return reason
}
