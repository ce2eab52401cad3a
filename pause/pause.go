// Package pause is podrun's built-in pause program: PID 1 of every pod
// sandbox. It holds the pod's namespaces, reaps zombies, and exits 0 on
// SIGINT or SIGTERM, like the kubelet's build/pause.
package pause

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// Run blocks until SIGINT or SIGTERM and returns the exit code (0).
func Run() int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGCHLD)
	for sig := range sigs {
		if sig != unix.SIGCHLD {
			return 0
		}
		reap()
	}
	return 0
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
