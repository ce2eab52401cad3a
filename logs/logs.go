// Package logs writes and reads container logs in the CRI format the kubelet
// uses: one line per record, `<RFC3339Nano time> <stdout|stderr> <F|P> <text>`,
// where P marks a partial line (split because it was longer than MaxLine).
package logs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// MaxLine is the longest line written as one record, as in containerd's CRI
// (max_container_log_line_size): a longer one is split into P records.
const MaxLine = 16 * 1024

// MaxJoined is the longest line the readers (Copy, Tail) join from P
// records: a container's line with no newline in sight is read as lines of
// this size, so reading a log takes bounded memory whatever was written.
const MaxJoined = 4 * MaxLine

// Path is where a container's log lives: <dir>/<ns>_<pod>_<uid>/<container>/<restarts>.log.
func Path(dir, namespace, pod, uid, container string, restarts int) string {
	return filepath.Join(PodDir(dir, namespace, pod, uid), container, fmt.Sprintf("%d.log", restarts))
}

// PodDir is the pod's directory under the log dir, <ns>_<pod>_<uid>. A
// name is at most 255 bytes: with a pod name that long (valid up to 253),
// the name is cut and a hash of it added, <ns>_<start of pod>-<hash>_<uid>
// (the kubelet's own would be over the limit: kubernetes#80042).
func PodDir(dir, namespace, pod, uid string) string {
	if over := len(namespace) + len(pod) + len(uid) + 2 - maxNameLen; over > 0 {
		sum := sha256.Sum256([]byte(pod))
		pod = pod[:len(pod)-over-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return filepath.Join(dir, namespace+"_"+pod+"_"+uid)
}

// maxNameLen is the longest file name.
const maxNameLen = 255

// Open opens (appending) the log file at path, rotated per rot, making its
// directory and marking the pod's log directory as podrun's (GC).
func Open(path string, rot Rotation) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := markPodDir(filepath.Dir(path)); err != nil { // GC removes only what podrun made
		return nil, err
	}
	return openRotating(path, rot, time.Now)
}
