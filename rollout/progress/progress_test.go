package progress

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeadline(t *testing.T) {
	ten := int32(10)
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		workload *int32
		want     time.Duration
		err      bool
	}{
		{"default", nil, nil, time.Minute, false},
		{"workload", nil, &ten, 10 * time.Second, false},
		{"annotation first", map[string]string{DeadlineAnnotation: "5"}, &ten, 5 * time.Second, false},
		{"bad annotation", map[string]string{DeadlineAnnotation: "soon"}, nil, 0, true},
		{"zero annotation", map[string]string{DeadlineAnnotation: "0"}, nil, 0, true},
		// Past what a time.Duration holds: on cbe04fe 9223372037 s wrapped
		// to a negative deadline and the pod was rolled back at once.
		{"the longest annotation", map[string]string{DeadlineAnnotation: "9223372036"}, nil, 9223372036 * time.Second, false},
		{"annotation past a Duration", map[string]string{DeadlineAnnotation: "9223372037"}, nil, 0, true},
		{"annotation past an int64", map[string]string{DeadlineAnnotation: "99999999999999999999"}, nil, 0, true},
		{"the longest workload deadline", nil, ptrInt32(math.MaxInt32), math.MaxInt32 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Deadline(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.ann}}, tc.workload, time.Minute)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Deadline = %v, %v; want %v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "back-off"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}
	}
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Message: "containers with unready status: [app]"}
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		st     corev1.PodStatus
		after  time.Duration
		want   Phase
		reason string
	}{
		{"ready", corev1.RestartPolicyAlways, corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}, time.Hour, Ready, ""},
		{"starting", corev1.RestartPolicyAlways, corev1.PodStatus{Conditions: []corev1.PodCondition{notReady}}, time.Second, Progressing, ""},
		{"crash loop at once", corev1.RestartPolicyAlways, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("CrashLoopBackOff")}}, time.Second, Failed, "CrashLoopBackOff"},
		{"image back-off", corev1.RestartPolicyAlways, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff")}}, time.Second, Failed, "ImagePullBackOff"},
		{"cannot start", corev1.RestartPolicyAlways, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("RunContainerError")}}, time.Second, Failed, "RunContainerError"},
		{"config error", corev1.RestartPolicyAlways, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("CreateContainerConfigError")}}, time.Second, Failed, "CreateContainerConfigError"},
		{"waiting to be created", corev1.RestartPolicyAlways, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ContainerCreating")}}, time.Second, Progressing, ""},
		{"init failed under Never", corev1.RestartPolicyNever, corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}}, time.Second, Failed, "Error"},
		{"init failed under Always restarts", corev1.RestartPolicyAlways, corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}}, time.Second, Progressing, ""},
		{"pod failed", corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, time.Second, Failed, "Evicted"},
		{"deadline", corev1.RestartPolicyAlways, corev1.PodStatus{Conditions: []corev1.PodCondition{notReady}}, time.Minute, Failed, ReasonDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{RestartPolicy: tc.policy}, Status: tc.st}
			v := Decide(pod, since, since.Add(tc.after), time.Minute)
			if v.Phase != tc.want || v.Reason != tc.reason {
				t.Fatalf("Decide = %+v, want %s %s", v, tc.want, tc.reason)
			}
			if v.Phase == Failed && v.Message == "" {
				t.Fatal("a failure without a message")
			}
		})
	}
	v := Decide(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{notReady}}}, since, since.Add(time.Minute), time.Minute)
	if !strings.Contains(v.Message, "unready status: [app]") {
		t.Fatalf("the deadline's message %q does not say what is not ready", v.Message)
	}
}

func ptrInt32(v int32) *int32 { return &v }

func TestParseDeadlineMessage(t *testing.T) {
	_, err := Deadline(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{DeadlineAnnotation: "9223372037"}}}, nil, time.Minute)
	want := `metadata.annotations[podrun.io/progress-deadline-seconds]: Invalid value: "9223372037": must be between 1 and 9223372036, inclusive`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
}
