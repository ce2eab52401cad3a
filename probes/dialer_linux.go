package probes

import "syscall"

// lingerControl sets SO_LINGER to 1 s on probe sockets, as the kubelet's
// probe dialer does, so that closed probe connections do not pile up in
// TIME_WAIT.
func lingerControl(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
	})
}
