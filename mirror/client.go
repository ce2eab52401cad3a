package mirror

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// API is the part of client-go's clientset this package calls (core/v1:
// the Node's UID and the mirror pods and their status); a clientset, its fake and kubenode.Client
// have it.
type API interface {
	CoreV1() corev1client.CoreV1Interface
}

// client makes the actions' API calls with the node's credentials
// (system:node:NAME): what NodeRestriction lets a node do to pods is
// create mirror pods of its own, delete the pods bound to it and write
// their status.
type client struct {
	api  API
	node string
}

// errNodeGone is a node being deleted: it gets no mirror pod (the kubelet's
// "node has been removed from the cluster").
var errNodeGone = errors.New("the node is being deleted")

// nodeRef is the node's name and UID, read from its Node object (the
// kubelet's getNodeUID): a mirror pod's owner must name the node's current
// UID, or the API server refuses it.
func (c *client) nodeRef(ctx context.Context) (Node, error) {
	n, err := c.api.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
	if err != nil {
		return Node{}, fmt.Errorf("reading node %s: %w", c.node, err)
	}
	if n.DeletionTimestamp != nil {
		return Node{}, fmt.Errorf("node %s: %w", c.node, errNodeGone)
	}
	if n.UID == "" {
		return Node{}, fmt.Errorf("node %s has no UID", c.node)
	}
	return Node{Name: n.Name, UID: n.UID}, nil
}

// create creates static's mirror pod on node n, and reports whether it
// did: a pod of its name that is already its mirror pod (same hash: one
// created by an earlier round the informer had not shown yet) is success,
// as for the kubelet.
func (c *client) create(ctx context.Context, static *corev1.Pod, n Node) (bool, error) {
	m := Of(static, n)
	_, err := c.api.CoreV1().Pods(m.Namespace).Create(ctx, m, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, gerr := c.api.CoreV1().Pods(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
		if gerr == nil && isMirrorOf(got, static) {
			return false, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("creating mirror pod %s/%s: %w", m.Namespace, m.Name, err)
	}
	return true, nil
}

// remove deletes the mirror pod m, only if it is still the object seen
// (its UID as the precondition), at once (grace 0: the static pod's
// containers are the node's, not the mirror's), as the kubelet's
// DeleteMirrorPod. It reports whether it deleted it: a pod already gone,
// or replaced by another of the same name since (the precondition fails),
// is not an error.
func (c *client) remove(ctx context.Context, m *corev1.Pod) (bool, error) {
	grace := int64(0)
	uid := m.UID
	err := c.api.CoreV1().Pods(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("deleting mirror pod %s/%s: %w", m.Namespace, m.Name, err)
}
