package kubepods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/run"
)

// StatusPeriod is how often the node looks at its pods' status to write
// what changed (the kubelet writes at each change of its pod workers; the
// node's status is computed from what it finds, so it is looked at).
const StatusPeriod = time.Second

// sentFor is how long a status sent stands for the API's while the watch
// has not brought it back; after it, the API's is compared again (the
// kubelet's syncBatch reconciles every 10 s).
const sentFor = 10 * time.Second

// Lister lists the pods on the node (run.Host).
type Lister interface {
	Pods(ctx context.Context) ([]*run.PodInfo, error)
}

// Writer writes back the status of the pods bound to the node, and deletes
// the objects of those deleted once nothing of them is left on the node:
// the one writer of pod status, as the kubelet's status manager.
type Writer struct {
	Client API
	Source *Source
	Node   Lister
	Clock  clock.WithTicker
	Log    *slog.Logger

	sent map[types.UID]sent
}

// sent is a status written, and when.
type sent struct {
	status *corev1.PodStatus
	at     time.Time
}

// onNode are the statuses of the API's pods on the node, by UID (nil:
// the node cannot compute it).
func (w *Writer) onNode(ctx context.Context) (map[types.UID]*corev1.PodStatus, error) {
	pods, err := w.Node.Pods(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the pods on the node: %w", err)
	}
	node := map[types.UID]*corev1.PodStatus{}
	for _, p := range pods {
		if p.Source != SourceName {
			continue
		}
		node[types.UID(p.UID)] = nil
		if p.Pod != nil {
			node[types.UID(p.UID)] = &p.Pod.Status
		}
	}
	return node, nil
}

// KeepFinished keeps the statuses of the API's pods that finished on the
// node (Source.Finished), every StatusPeriod until ctx ends, apart from
// the writes: a write to an API server going away may hang for its
// timeout, and a pod that finishes meanwhile must be kept finished before
// a power cut.
func (w *Writer) KeepFinished(ctx context.Context) {
	t := w.Clock.NewTicker(StatusPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if len(w.Source.Current().Pods) == 0 {
			continue
		}
		node, err := w.onNode(ctx)
		if err != nil {
			continue // the writer says so
		}
		w.Source.Finished(node)
	}
}

// Run writes every StatusPeriod until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	t := w.Clock.NewTicker(StatusPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := w.Sync(ctx); err != nil && ctx.Err() == nil {
			w.Log.Warn("writing the status of the pods bound to the node; retrying", "err", err)
		}
	}
}

// Sync writes what Decide says, once; it stops at the first error that is
// not the API server's answer about one pod (an API server that does not
// answer is tried again at the next round).
func (w *Writer) Sync(ctx context.Context) error {
	cur := w.Source.Current()
	if !cur.Synced || len(cur.API) == 0 {
		return nil // nothing to write: the node is not listed
	}
	node, err := w.onNode(ctx)
	if err != nil {
		return err
	}
	// A pod that finished while the API server did not answer, and of
	// which nothing is left after a reboot: its kept status is written.
	finished := w.Source.KeptFinished()
	for _, pod := range cur.API {
		if _, on := node[pod.UID]; !on && finished[pod.UID] != nil && pod.DeletionTimestamp == nil && !terminal(pod.Status.Phase) {
			node[pod.UID] = finished[pod.UID]
		}
	}
	if w.sent == nil {
		w.sent = map[types.UID]sent{}
	}
	now := w.Clock.Now()
	last := map[types.UID]*corev1.PodStatus{}
	for uid, s := range w.sent {
		if now.Sub(s.at) < sentFor {
			last[uid] = s.status
		} else {
			delete(w.sent, uid)
		}
	}
	for _, op := range Decide(cur.API, node, cur.Rejected, last, now) {
		err := w.write(ctx, op)
		var status apierrors.APIStatus
		switch {
		case err == nil:
			if op.Delete {
				w.Source.Forget(op.Pod.UID)
			}
			if op.Status != nil {
				w.sent[op.Pod.UID] = sent{status: op.Status, at: now}
			}
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone, or another pod of the name now (the UID precondition).
			if op.Delete {
				w.Source.Forget(op.Pod.UID)
			}
			w.Log.Info("pod bound to the node gone from the API meanwhile", "pod", key(op.Pod), "uid", op.Pod.UID, "err", err)
		case errors.As(err, &status):
			w.Log.Warn("writing a pod bound to the node", "pod", key(op.Pod), "err", err)
		default:
			return err
		}
	}
	return nil
}

// callTimeout bounds one call to the API server (the pods client has no
// timeout of its own: its watch lasts).
const callTimeout = 10 * time.Second

// write does one Write.
func (w *Writer) write(ctx context.Context, op Write) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	pods := w.Client.CoreV1().Pods(op.Pod.Namespace)
	if op.Delete {
		// Nothing of it left on the node: its object goes at once, and
		// only if it is still this pod (the kubelet's final Delete).
		zero, uid := int64(0), op.Pod.UID
		if err := pods.Delete(ctx, op.Pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
			return fmt.Errorf("deleting pod %s: %w", key(op.Pod), err)
		}
		w.Log.Info("deleted the pod's object: nothing of it is left on the node", "pod", key(op.Pod), "uid", uid)
		return nil
	}
	// As the kubelet's status manager: the patch is made from the pod as
	// it is now, not as the watch last brought it (a status written a
	// moment ago may not be back yet: a reason it set would stay).
	cur, err := pods.Get(ctx, op.Pod.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading pod %s: %w", key(op.Pod), err)
	}
	if cur.UID != op.Pod.UID {
		return fmt.Errorf("pod %s: %w", key(op.Pod), apierrors.NewConflict(corev1.Resource("pods"), op.Pod.Name, errors.New("another pod of the name")))
	}
	want := Want(cur, *op.Computed)
	*op.Status = want // what is sent (or there already)
	if apiequality.Semantic.DeepEqual(want, cur.Status) || (terminal(cur.Status.Phase) && !terminal(want.Phase)) {
		return nil
	}
	patch, err := StatusPatch(op.Pod.UID, cur.Status, want)
	if err != nil {
		return err
	}
	if _, err := pods.Patch(ctx, op.Pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patching the status of pod %s: %w", key(op.Pod), err)
	}
	return nil
}
