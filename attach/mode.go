// How attach reaches a container, by kubectl attach's rules.

package attach

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
)

// Mode is how an attach reaches a container.
type Mode struct {
	// Log: the container has neither stdin nor a terminal, so no keeper:
	// its output is its log's, followed from now on.
	Log bool
	// Stdin is sent to the container.
	Stdin bool
	// TTY: the container's streams are a terminal's.
	TTY bool
	// NoTTY: a terminal was asked of a container that has none; as
	// kubectl, say so and go on without one.
	NoTTY bool
}

// ErrNoStdin is stdin asked of a container that has none.
var ErrNoStdin = errors.New("has no stdin to attach to (stdin: true in its spec)")

// ModeOf is how to attach to container c when stdin and tty (-i, -t) are
// asked: the container's own terminal decides whether the streams are a
// terminal's; stdin needs the container's stdin (ErrNoStdin, with the mode
// that would have been, for its NoTTY).
func ModeOf(c *corev1.Container, stdin, tty bool) (Mode, error) {
	m := Mode{Stdin: stdin, TTY: c.TTY, NoTTY: tty && !c.TTY, Log: !c.Stdin && !c.TTY}
	if stdin && !c.Stdin {
		return m, ErrNoStdin
	}
	return m, nil
}

// ContainerSpec is the spec of pod's app or init container name; nil when
// there is none.
func ContainerSpec(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
