// Package e2e runs podrun end to end: the real binary against a private
// containerd (own root, state and socket under a temp dir), runc, the
// distribution's CNI plugins and a busybox image built offline.
//
// TestMain builds the binary, starts containerd, imports the image, runs the
// tests, then checks that nothing was left behind (containers, tasks,
// snapshots, leases, netns, veths, bridges, mounts, host-local IP files,
// iptables rules, shims, stray dirs) and fails the suite if anything was.
// The tests need root; without it every test that uses H skips.
package e2e
