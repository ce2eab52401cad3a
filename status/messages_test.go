package status

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTrimMessages: a pod's termination messages share 12 KiB: each
// container's (state and lastState) is cut to 12 KiB / containers, as the
// kubelet's status manager cuts them.
func TestTrimMessages(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
	}}
	long, short := strings.Repeat("m", 5000), "ok"
	term := func(m string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: m}}
	}
	st := corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{State: term(long)}},
		ContainerStatuses:     []corev1.ContainerStatus{{State: term(short), LastTerminationState: term(long)}, {}},
	}
	trimMessages(pod, &st)
	share := 12 << 10 / 3
	if got := len(st.InitContainerStatuses[0].State.Terminated.Message); got != share {
		t.Errorf("init message %d bytes, want %d", got, share)
	}
	if got := st.ContainerStatuses[0].State.Terminated.Message; got != short {
		t.Errorf("short message %q changed", got)
	}
	if got := len(st.ContainerStatuses[0].LastTerminationState.Terminated.Message); got != share {
		t.Errorf("lastState message %d bytes, want %d", got, share)
	}
}

// TestUser: user.linux from the label the container was created with.
func TestUser(t *testing.T) {
	u := user(UserLabel(1000, 1000, []uint32{1000, 2000}))
	if u == nil || u.Linux.UID != 1000 || u.Linux.GID != 1000 || len(u.Linux.SupplementalGroups) != 2 || u.Linux.SupplementalGroups[1] != 2000 {
		t.Errorf("user = %+v", u)
	}
	if user("") != nil || user("x:y:z") != nil {
		t.Error("a missing or bad label gives a user")
	}
}
