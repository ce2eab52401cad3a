package lock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A life lock is held by a process for as long as it runs: the kernel
// releases it however the process ends, so whether it is held says
// whether its holder runs — a pid written in a file does not (it outlives
// a kill -9, and is reused). The file names the holder by pid and start
// time, so that it is signalled, never a process that has its pid since.

// Process is a process named by its pid and its start time (clock ticks
// after boot, /proc/<pid>/stat field 22): a pid is reused, the pair is not.
type Process struct {
	PID   int
	Start uint64
}

// ErrGone is the error of a process that has ended (its pid may name
// another process now).
var ErrGone = errors.New("the process has ended")

// HoldLife takes the life lock at path for this process, waiting until ctx
// ends (waiting is told once which pid holds it); it is held until
// Release, or until this process ends.
func HoldLife(ctx context.Context, path string, waiting func(holder int)) (*File, error) {
	start, err := started(os.Getpid())
	if err != nil {
		return nil, err
	}
	return acquire(ctx, path, strconv.FormatUint(start, 10)+"\n", waiting)
}

// Holder is the process that holds the life lock at path; ok is false
// when none does. A holder that has not written its name yet is the zero
// Process.
func Holder(path string) (p Process, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Process{}, false, nil
	}
	if err != nil {
		return Process{}, false, fmt.Errorf("reading the lock %s: %w", path, err)
	}
	defer f.Close()
	// A shared lock, taken for an instant: a holder that starts meanwhile
	// waits for it (acquire polls).
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if err == nil {
		return Process{}, false, nil // free: its holder has ended
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return Process{}, false, fmt.Errorf("reading the lock %s: %w", path, err)
	}
	b := make([]byte, 64)
	n, _ := f.ReadAt(b, 0)
	pid, rest, _ := strings.Cut(string(b[:n]), "\n")
	start, _, _ := strings.Cut(rest, "\n")
	p.PID, _ = strconv.Atoi(pid)
	p.Start, _ = strconv.ParseUint(start, 10, 64)
	if p.PID <= 0 || p.Start == 0 {
		return Process{}, true, nil
	}
	return p, true, nil
}

// Signal sends sig to p, or returns ErrGone if p has ended: another
// process that has p's pid since is never signalled.
func (p Process) Signal(sig unix.Signal) error {
	if p.PID <= 0 {
		return ErrGone
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return ErrGone
	case errors.Is(err, unix.ENOSYS):
		fd = -1 // before Linux 5.3: the start time is checked just before kill
	case err != nil:
		return fmt.Errorf("signalling pid %d: %w", p.PID, err)
	default:
		defer unix.Close(fd)
	}
	// fd is the process that had the pid when it was opened: had that one
	// ended since and the pid been reused, the start time read now would
	// be the new process's.
	if start, err := started(p.PID); err != nil || start != p.Start {
		return ErrGone
	}
	if fd < 0 {
		err = unix.Kill(p.PID, sig)
	} else {
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
	if errors.Is(err, unix.ESRCH) {
		return ErrGone
	}
	if err != nil {
		return fmt.Errorf("signalling pid %d: %w", p.PID, err)
	}
	return nil
}

// started is the start time of process pid (ErrGone if there is none).
func started(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return 0, ErrGone
	}
	if err != nil {
		return 0, err
	}
	return parseStart(b)
}

// parseStart is the start time in a /proc/<pid>/stat line: field 22,
// counted after the command, which is in parentheses and may hold any
// byte (the last ')' ends it).
func parseStart(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("reading a process's start time: no command in its stat")
	}
	// After ") ": field 3 (state) onwards; the start time is field 22.
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("reading a process's start time: short stat")
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading a process's start time: %w", err)
	}
	return v, nil
}
