package attach

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestModeOf: kubectl attach's rules. The container's terminal decides
// whether the streams are a terminal's (-t on one without is said and
// ignored); -i needs its stdin; neither stdin nor a terminal: its log.
func TestModeOf(t *testing.T) {
	for _, tt := range []struct {
		name           string
		ctr            corev1.Container
		stdin, tty     bool
		want           Mode
		wantErrNoStdin bool
	}{
		{name: "plain container: the log", want: Mode{Log: true}},
		{name: "plain container, -t: the log, said", tty: true, want: Mode{Log: true, NoTTY: true}},
		{name: "plain container, -i: refused", stdin: true, want: Mode{Log: true, Stdin: true}, wantErrNoStdin: true},
		{name: "-it on stdin and tty", ctr: corev1.Container{Stdin: true, TTY: true}, stdin: true, tty: true, want: Mode{Stdin: true, TTY: true}},
		{name: "-i on stdin and tty: a terminal anyway", ctr: corev1.Container{Stdin: true, TTY: true}, stdin: true, want: Mode{Stdin: true, TTY: true}},
		{name: "-it on stdin only: no terminal, said", ctr: corev1.Container{Stdin: true}, stdin: true, tty: true, want: Mode{Stdin: true, NoTTY: true}},
		{name: "output of a tty container", ctr: corev1.Container{TTY: true}, want: Mode{TTY: true}},
	} {
		got, err := ModeOf(&tt.ctr, tt.stdin, tt.tty)
		if got != tt.want || errors.Is(err, ErrNoStdin) != tt.wantErrNoStdin || (err != nil && !tt.wantErrNoStdin) {
			t.Errorf("%s: ModeOf = %+v, %v; want %+v, ErrNoStdin %v", tt.name, got, err, tt.want, tt.wantErrNoStdin)
		}
	}
}

func TestContainerSpec(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}},
	}}
	for _, name := range []string{"app", "init"} {
		if c := ContainerSpec(pod, name); c == nil || c.Name != name {
			t.Errorf("ContainerSpec(%q) = %v", name, c)
		}
	}
	if c := ContainerSpec(pod, "none"); c != nil {
		t.Errorf("ContainerSpec(none) = %v, want nil", c)
	}
	if c := ContainerSpec(nil, "app"); c != nil {
		t.Errorf("ContainerSpec of no pod = %v, want nil", c)
	}
}
