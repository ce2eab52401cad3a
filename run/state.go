// What podrun keeps of a pod on the node: its record (State, pod.json in
// the pod directory: what containerd cannot hold), the records of the pods
// kept without running (refused, failed for good, waiting on their
// configuration), and the ids and labels of its containers in containerd.

package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/volumes"
)

// State is what podrun keeps about a pod that containerd cannot hold: the
// applied manifest and how far its pipeline got. It lives in the pod
// directory as pod.json, written atomically.
type State struct {
	UID    string      `json:"uid"`
	Hash   string      `json:"hash"`
	Source string      `json:"source"`
	Pod    *corev1.Pod `json:"pod"`
	// Complete is set once every step of up has succeeded.
	Complete bool `json:"complete"`
	// PodIPs are the addresses CNI gave the pod.
	PodIPs []string `json:"podIPs,omitempty"`
	// Ended is why the node ended the pod (end.go, as package eviction
	// decides: an eviction, the active deadline): it is Failed whatever its containers say, and none
	// is restarted.
	Ended *status.Ended `json:"ended,omitempty"`
	// ImagePull is the image failure a pod that could not start waits on
	// (imagepull.go): its containers show it as their waiting reason.
	ImagePull *status.ImageWait `json:"imagePull,omitempty"`
	// ConfigWait is the container a pod that could not start could not
	// create (keepConfigWaiting): it shows CreateContainerConfigError.
	ConfigWait *status.ConfigWait `json:"configWait,omitempty"`
	// Refused: nothing of the pod runs but this record, kept until its
	// manifest changes: the node refused it at admission (Ended says why),
	// or it failed for good while starting (Final).
	Refused bool `json:"refused,omitempty"`
	// Final is the status of a pod that failed for good while starting
	// (keepFailed), or that the node refused (status.Rejected), shown as it was.
	Final *corev1.PodStatus `json:"final,omitempty"`
}

// recordRefusal records a pod the node refused as the kubelet shows one:
// Failed with the refusal's reason and message, nothing else made.
func (h *Host) recordRefusal(p *manifest.Pod, r *admission.Refusal) error {
	return h.makeState(&State{UID: p.UID, Hash: p.Hash, Source: p.Source.Origin(), Pod: p.Pod, Complete: true, Refused: true,
		Ended: &status.Ended{Reason: r.Reason, Message: r.Message}, Final: status.Rejected(p.Pod, r, h.clock.Now())})
}

// StateFile is a pod's record in its directory: a pod directory without
// one is no pod's (volumes.SweepRemoved).
const StateFile = stateFile

const (
	stateFile = "pod.json"
	cniFile   = "cni.conflist" // the network configuration the pod was attached with
)

func (h *Host) layout(uid string) volumes.Layout { return volumes.Layout{Root: h.cfg.Root, UID: uid} }

func (h *Host) volumeOptions() volumes.Options {
	return volumes.Options{AllowedHostPaths: h.cfg.AllowedHostPaths}
}

// makeState records s, making its pod directory with it if there is none
// (the directory never exists without its record: volumes.Layout.Make).
func (h *Host) makeState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return h.disk.Make(h.layout(s.UID), stateFile, data)
}

func (h *Host) saveState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return h.disk.WriteFile(h.layout(s.UID).File(stateFile), data, 0o640)
}

// loadState reads a pod's state; a missing file returns (nil, nil).
func (h *Host) loadState(uid string) (*State, error) {
	data, err := os.ReadFile(h.layout(uid).File(stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading state of pod %s: %w", uid, err)
	}
	return &s, nil
}

// stateUIDs lists the pod UIDs that have a directory under the state dir;
// a hidden one is a pod directory being removed (volumes.Layout.Remove),
// no pod's any more.
func (h *Host) stateUIDs() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(h.cfg.Root, "pods"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			uids = append(uids, e.Name())
		}
	}
	return uids, nil
}

func (r *podRun) labels(name, kind string, restart int, stopSignal string) map[string]string {
	l := labels.Pod(r.pod.UID, r.pod.Namespace, r.pod.Name, r.pod.Hash, r.source)
	l[labels.Container] = name
	l[labels.Kind] = kind
	l[labels.RestartCount] = strconv.Itoa(restart)
	if stopSignal != "" {
		l[labels.StopSignal] = stopSignal
	}
	return l
}

// ErrKeptFailed marks the failure of a pod recorded Failed (keepFailed):
// it is not tried again until its manifest changes.
var ErrKeptFailed = errors.New("kept Failed until its manifest changes")

// keepFailed records a pod whose init container failed under
// restartPolicy Never (its steps undone) with the status it had then:
// listed Failed, its init containers Completed and Error, and kept so,
// nothing started again, until its manifest changes, as the kubelet keeps
// a static pod that failed.
func (h *Host) keepFailed(p *manifest.Pod, source string, final *corev1.PodStatus) error {
	return h.makeState(&State{UID: p.UID, Hash: p.Hash, Source: source, Pod: p.Pod, Complete: true, Refused: true, Final: final})
}

// keepConfigWaiting records a pod that Up could not start (its steps
// undone) because a container could not be created from its
// configuration, so that `podrun ps` and `status` show it Pending with
// that container waiting in CreateContainerConfigError and the message,
// as the kubelet shows such a pod while it tries it again.
func (h *Host) keepConfigWaiting(p *manifest.Pod, source string, cerr *spec.ConfigError) error {
	return h.makeState(&State{UID: p.UID, Hash: p.Hash, Source: source, Pod: p.Pod,
		ConfigWait: &status.ConfigWait{Container: cerr.Container, Reason: spec.ReasonCreateContainerConfigError, Message: cerr.Msg}})
}

// shortUID is the first 12 hex digits of a pod UID, the prefix of its
// containers' ids.
func shortUID(uid string) string {
	s := strings.ReplaceAll(uid, "-", "")
	if len(s) > 12 {
		s = s[:12]
	}
	return s
}

// SandboxID is the pause container's id.
func SandboxID(uid string) string { return shortUID(uid) + "-pause" }

// ContainerID is the id of one attempt (restart) of a container; container
// names are DNS labels, so "<uid12>-<name>-<n>" never clashes with the sandbox.
func ContainerID(uid, name string, restart int) string {
	return fmt.Sprintf("%s-%s-%d", shortUID(uid), name, restart)
}

// podCgroup is the pod cgroup of pod uid in podrun's containerd namespace.
func (h *Host) podCgroup(uid string) string {
	return spec.PodCgroup(h.cfg.Namespace, uid)
}
