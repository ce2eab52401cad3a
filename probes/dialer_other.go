//go:build !linux

package probes

import "syscall"

// lingerControl is a no-op off Linux.
func lingerControl(_, _ string, _ syscall.RawConn) error { return nil }
