#!/usr/bin/env bash
# cluster-bin.sh: the real control plane's binaries the cluster tests start
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl),
# built once per machine by ../shared/cluster-anchor/build.sh, and the real
# kubelet that joins the same cluster as a second node (TestNodeSideBySide),
# built by ../shared/kubelet-anchor/build.sh; cached, as vm/rootfs.sh caches
# the VM guests. Prints the directory holding them.
#
#   scripts/cluster-bin.sh            build when missing (root; ~20 min on 2 cores
#                                     from empty Go caches), print the directory
#   scripts/cluster-bin.sh --cached   print it only if it is built (exit 1 if not)
#
# Environment: KVER (default v1.37.2: the API podrun's go.mod speaks), ETCD
# (v3.6.5), CLUSTER_ANCHOR (cluster-anchor's directory, default ../shared
# beside the checkout), KUBELET_ANCHOR (kubelet-anchor's, default beside
# CLUSTER_ANCHOR), PODRUN_CLUSTER_CACHE (default /var/cache/podrun-cluster),
# ADOPT_BIN (default /var/lib/anchor/bin, build.sh's own output; empty: never),
# GO (the go command; its directory goes first on build.sh's PATH).
#
# The build is cached as CACHE/KVER-etcdETCD-HASH, HASH of both build.sh and this
# script: a new version or build script builds a new one and removes the
# older ones. When ADOPT_BIN already holds all six binaries and they say the
# wanted versions (`kube-apiserver --version`, `etcd --version`), they are
# copied instead of built (a machine that ran build.sh by hand). One build at
# a time (flock on CACHE/build.lock): a second caller waits for the first and
# uses its result. The Go build runs under nice 19 (build.sh's), so that it
# takes only what the rest of `make test` leaves of the CPU.
set -euo pipefail
export LC_ALL=C

self=$(readlink -f "${BASH_SOURCE[0]}")
cd "$(dirname "$self")/.."
kver=${KVER:-v1.37.2}
etcd=${ETCD:-v3.6.5}
anchor=${CLUSTER_ANCHOR:-$PWD/../shared/cluster-anchor}
kanchor=${KUBELET_ANCHOR:-$anchor/../kubelet-anchor}
cache=${PODRUN_CLUSTER_CACHE:-/var/cache/podrun-cluster}
adopt=${ADOPT_BIN-/var/lib/anchor/bin}
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet)

case "${1:-}" in
"" | --cached) ;;
*) echo "usage: $0 [--cached]" >&2; exit 2 ;;
esac
if [ ! -r "$anchor/build.sh" ]; then
	echo "cluster-bin: no $anchor/build.sh (set CLUSTER_ANCHOR to ../shared/cluster-anchor's path)" >&2
	exit 1
fi
if [ ! -r "$kanchor/build.sh" ]; then
	echo "cluster-bin: no $kanchor/build.sh (set KUBELET_ANCHOR to ../shared/kubelet-anchor's path)" >&2
	exit 1
fi

key=$({ echo "$kver $etcd"; cat "$anchor/build.sh" "$kanchor/build.sh" "$self"; } | sha256sum | cut -c1-12)
dir="$cache/$kver-etcd$etcd-$key"
complete() { [ -f "$1/ok" ]; }
if complete "$dir"; then
	echo "$dir"
	exit 0
fi
if [ "${1:-}" = --cached ]; then
	echo "cluster-bin: the control plane $kver is not built in $cache: run sudo make cluster-bin (or scripts/cluster-bin.sh as root)" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "cluster-bin: needs root (the cache $cache is root's)" >&2
	exit 1
fi

mkdir -p "$cache"
exec 8>"$cache/build.lock"
flock 8
if complete "$dir"; then # built while we waited
	echo "$dir"
	exit 0
fi

# versions DIR: true when DIR holds all six binaries of kver and etcd.
versions() {
	local b
	for b in "${bins[@]}"; do [ -x "$1/$b" ] || return 1; done
	[ "$("$1/kube-apiserver" --version 2>/dev/null)" = "Kubernetes $kver" ] &&
		[ "$("$1/kubelet" --version 2>/dev/null)" = "Kubernetes $kver" ] &&
		[ "$("$1/etcd" --version 2>/dev/null | head -n1)" = "etcd Version: ${etcd#v}" ]
}

t0=$(date +%s)
work="$cache/.build"
rm -rf "$work"
mkdir -p "$work/out"
trap 'rm -rf "$work"' EXIT
if [ -n "$adopt" ] && versions "$adopt"; then
	echo "cluster-bin: copying the $kver control plane from $adopt (it says the wanted versions) into $dir" >&2
	for b in "${bins[@]}"; do cp "$adopt/$b" "$work/out/$b"; done
	echo "copied from $adopt" >"$work/out/origin"
else
	echo "cluster-bin: building the $kver control plane and etcd $etcd with $anchor/build.sh into $dir (once; log: $work/build.log while it runs)" >&2
	gobin=$(dirname "$(command -v "${GO:-go}" 2>/dev/null || echo /usr/local/go/bin/go)")
	if ! PATH="$gobin:$PATH" KVER=$kver ETCD=$etcd OUT="$work/out" B="$work/src" \
		bash "$anchor/build.sh" >"$work/build.log" 2>&1; then
		tail -n 40 "$work/build.log" >&2
		echo "cluster-bin: $anchor/build.sh failed" >&2
		exit 1
	fi
	# the kubelet: the same k8s.io/kubernetes module, so the Go caches the
	# control plane's build filled make it short
	if ! PATH="$gobin:$PATH" KVER=$kver OUT="$work/out/kubelet" B="$work/kubelet-src" \
		bash "$kanchor/build.sh" >>"$work/build.log" 2>&1; then
		tail -n 40 "$work/build.log" >&2
		echo "cluster-bin: $kanchor/build.sh failed" >&2
		exit 1
	fi
	echo "built by $anchor/build.sh and $kanchor/build.sh KVER=$kver ETCD=$etcd in $(($(date +%s) - t0)) s" >"$work/out/origin"
fi
if ! versions "$work/out"; then
	echo "cluster-bin: the binaries in $work/out do not say Kubernetes $kver and etcd ${etcd#v}" >&2
	exit 1
fi
touch "$work/out/ok"
for old in "$cache"/v*-etcd*; do
	[ "$old" != "$dir" ] && [ -d "$old" ] && rm -rf "$old"
done
rm -rf "$dir"
mv "$work/out" "$dir"
echo "cluster-bin: the $kver control plane ready after $(($(date +%s) - t0)) s: $dir" >&2
echo "$dir"
