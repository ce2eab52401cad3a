// Package termination is a container's termination message as the
// kubelet gives it: read from the file mounted at its
// terminationMessagePath (or the end of its log), and where the message is
// recorded in the pod directory once its exit is handled.
package termination

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/untrusted"
	"github.com/podrun/podrun/volumes"
)

// The kubelet's bounds on termination messages (kubecontainer): the last
// 4096 bytes of the file, or the last 80 lines and 2048 bytes of the log.
const (
	maxTerminationMessage  = 4096
	terminationLogLines    = 80
	maxTerminationLogBytes = 2048
)

// Message is the kubelet's getTerminationMessage for attempt id
// (restart n) of c, which ended with code: the end of the file mounted at
// its terminationMessagePath, or, with FallbackToLogsOnError, a failure
// and an empty file, the end of its log. The file is the container's to
// write, so it is opened without following a link and only its last bytes
// are read.
func Message(l volumes.Layout, logPath string, c *corev1.Container, id string, code uint32) string {
	fallback := c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && code != 0
	msg, err := readEnd(l.TerminationLog(c.Name, id), maxTerminationMessage)
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Sprintf("Error on reading termination log %s: %v", l.TerminationLog(c.Name, id), err)
	case msg != "" || !fallback:
		return msg
	}
	f, err := os.Open(logPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ""
		}
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	defer f.Close()
	return logs.TailText(f, terminationLogLines, maxTerminationLogBytes)
}

// readEnd reads the last limit bytes of the regular file at path, opened
// as a container's file is (untrusted.Open: never through a symlink, a
// FIFO or device swapped in is never opened).
func readEnd(path string, limit int64) (string, error) {
	f, err := untrusted.Open(nil, path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(st.Size()-limit, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, limit))
	return string(b), err
}

// Record is where the termination message of attempt id of
// container name is kept once its exit is handled: in the pod directory
// (root's only), apart from the containers' own files, whose tmpfs a
// container may fill (volumes.TerminationLogsSize).
func Record(l volumes.Layout, name, id string) string {
	return l.File(filepath.Join("termination-messages", name, id))
}

// OldRecord is where podrun kept the record before, next to the
// container's file: pods started then still have theirs there.
func OldRecord(l volumes.Layout, name, id string) string {
	return l.TerminationLog(name, id) + ".message"
}

// ReadRecord reads the record of attempt id of container name, where it is
// kept now or was before.
func ReadRecord(l volumes.Layout, name, id string) (string, bool) {
	for _, path := range []string{Record(l, name, id), OldRecord(l, name, id)} {
		if b, err := os.ReadFile(path); err == nil {
			return string(b), true
		}
	}
	return "", false
}
