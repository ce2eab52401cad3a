package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
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
	// create (configwait.go): it shows CreateContainerConfigError.
	ConfigWait *status.ConfigWait `json:"configWait,omitempty"`
	// Refused: nothing of the pod runs but this record, kept until its
	// manifest changes: the node refused it at admission (Ended says why),
	// or it failed for good while starting (Final).
	Refused bool `json:"refused,omitempty"`
	// Final is the status of a pod that failed for good while starting
	// (failed.go), or that the node refused (rejectedStatus), shown as it was.
	Final *corev1.PodStatus `json:"final,omitempty"`
}

// recordRefusal records a pod the node refused as the kubelet shows one:
// Failed with the refusal's reason and message, nothing else made.
func (h *Host) recordRefusal(p *manifest.Pod, r *admission.Refusal) error {
	return h.makeState(&State{UID: p.UID, Hash: p.Hash, Source: p.Source.Origin(), Pod: p.Pod, Complete: true, Refused: true,
		Ended: &status.Ended{Reason: r.Reason, Message: r.Message}, Final: rejectedStatus(p.Pod, r, h.clock.Now())})
}

// rejectedStatus is the status the kubelet's rejectPod gives a pod it
// refused at admission: Failed, the reason, "Pod was rejected: " and the
// message, the QoS class, and the start time its status manager sets; no
// conditions and no container statuses, nothing having been made.
func rejectedStatus(pod *corev1.Pod, r *admission.Refusal, now time.Time) *corev1.PodStatus {
	start := metav1.NewTime(now.UTC().Truncate(time.Second))
	return &corev1.PodStatus{Phase: corev1.PodFailed, Reason: r.Reason, Message: "Pod was rejected: " + r.Message,
		QOSClass: resources.QOSClass(pod), StartTime: &start}
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
