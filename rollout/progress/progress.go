// Package progress decides whether a new version of a pod is on its way to
// Ready, is Ready, or has failed: a Deployment's Progressing condition,
// for one pod. It is pure: a pod's status and the time in, a verdict out.
package progress

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DeadlineAnnotation sets a pod's progress deadline, in seconds.
const DeadlineAnnotation = "podrun.io/progress-deadline-seconds"

// ReasonDeadlineExceeded is a Deployment's Progressing=False reason.
const ReasonDeadlineExceeded = "ProgressDeadlineExceeded"

// Phase is where a new version stands.
type Phase string

// Phases.
const (
	Progressing Phase = "Progressing"
	Ready       Phase = "Ready"
	Failed      Phase = "Failed"
)

// Verdict is a Phase and, for Failed, why: a container's waiting or
// terminated reason, or ProgressDeadlineExceeded, and a message.
type Verdict struct {
	Phase   Phase
	Reason  string
	Message string
}

// MaxDeadlineSeconds is the longest deadline DeadlineAnnotation may set:
// the most seconds a time.Duration holds (292 years). Past it the deadline
// wrapped to a negative one, and the pod was rolled back at once.
const MaxDeadlineSeconds = math.MaxInt64 / int64(time.Second)

// ParseDeadline reads the value of DeadlineAnnotation: a whole number of
// seconds from 1 to MaxDeadlineSeconds. Its error is a field error in the
// API server's words, at fld.
func ParseDeadline(v string, fld *field.Path) (time.Duration, *field.Error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > MaxDeadlineSeconds {
		return 0, field.Invalid(fld, v, rangeError(1, MaxDeadlineSeconds))
	}
	return time.Duration(n) * time.Second, nil
}

// rangeError is apimachinery's validation.InclusiveRangeError for int64
// bounds (its int does not hold MaxDeadlineSeconds on 32-bit boards).
func rangeError(lo, hi int64) string {
	return fmt.Sprintf("must be between %d and %d, inclusive", lo, hi)
}

// Deadline is pod's progress deadline: its DeadlineAnnotation, else the
// workload's progressDeadlineSeconds (workload, nil when none), else def.
func Deadline(pod *corev1.Pod, workload *int32, def time.Duration) (time.Duration, error) {
	if v, ok := pod.Annotations[DeadlineAnnotation]; ok {
		d, err := ParseDeadline(v, field.NewPath("metadata", "annotations").Key(DeadlineAnnotation))
		if err != nil {
			return 0, err
		}
		return d, nil
	}
	if workload != nil && *workload > 0 {
		return time.Duration(*workload) * time.Second, nil
	}
	return def, nil
}

// certain are the waiting reasons after which a container will not get
// Ready on its own: it crashes, its image cannot be had, its configuration
// cannot be used.
var certain = map[string]bool{
	"CrashLoopBackOff":           true,
	"RunContainerError":          true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
}

// Decide is the verdict on pod (its spec and status), started at since,
// at now, given deadline: Ready once its Ready condition is True; Failed
// as soon as failure is certain (the pod Failed, a container waiting for
// one of the certain reasons, an init container that failed under
// restartPolicy Never) or when the deadline has passed; else Progressing.
func Decide(pod *corev1.Pod, since, now time.Time, deadline time.Duration) Verdict {
	st := pod.Status
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return Verdict{Phase: Ready}
		}
	}
	if st.Phase == corev1.PodFailed {
		return Verdict{Phase: Failed, Reason: cmp.Or(st.Reason, "PodFailed"), Message: cmp.Or(st.Message, fmt.Sprintf("pod %q failed", pod.Name))}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), st.InitContainerStatuses...), st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && certain[w.Reason] {
			return Verdict{Phase: Failed, Reason: w.Reason, Message: fmt.Sprintf("container %q: %s%s", cs.Name, w.Message, lastState(cs))}
		}
	}
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		for _, cs := range st.InitContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				return Verdict{Phase: Failed, Reason: cmp.Or(t.Reason, "Error"),
					Message: fmt.Sprintf("init container %q exited with code %d", cs.Name, t.ExitCode)}
			}
		}
	}
	if !now.Before(since.Add(deadline)) {
		return Verdict{Phase: Failed, Reason: ReasonDeadlineExceeded,
			Message: fmt.Sprintf("pod %q has not become Ready within %s%s", pod.Name, deadline, notReady(st))}
	}
	return Verdict{Phase: Progressing}
}

// lastState says how a waiting container's last attempt ended.
func lastState(cs corev1.ContainerStatus) string {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return fmt.Sprintf(" (last attempt exited with code %d, %s)", t.ExitCode, cmp.Or(t.Reason, "Error"))
	}
	return ""
}

// notReady is the Ready condition's message, when there is one.
func notReady(st corev1.PodStatus) string {
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady && c.Message != "" {
			return ": " + strings.TrimSpace(c.Message)
		}
	}
	return ""
}
