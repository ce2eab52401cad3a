// Package sandbox makes what a pod's containers share on the host apart
// from its volumes: the network namespace and its CNI attachment (libcni;
// a detach first waits out the plugins of an attach a killed podrun cut
// off), the IPC and UTS namespaces pinned to files, and the hostname,
// /etc/hosts and /etc/resolv.conf the kubelet would write for the pod.
package sandbox
