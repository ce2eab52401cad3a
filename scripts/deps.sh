#!/usr/bin/env bash
# deps.sh SET...: installs the Debian packages of the named sets, only those
# that are missing (apt-get update runs once, and only then). Idempotent;
# quiet when everything is already there.
#
#   runtime  what running a pod needs: containerd, runc, CNI plugins, iptables
#            (`make up`, and a device that runs podrun)
#   demo     busybox-static: `make up` builds its demo image offline from it
#   e2e      the end-to-end suite's extras (`make e2e`, `make e2e-cluster`): a local registry, ...
#   vm       `make test-vm`: qemu for amd64 and arm64 guests, debootstrap, ...
#   dev      what a plain `go build`/`go vet` (outside make, without its build tag) needs
#   test     all of the above (`make test`, CI)
set -euo pipefail

runtime=(
	containerd                  # the runtime podrun drives; the e2e suite starts a private one
	runc                        # OCI runtime used by containerd's runc shim
	containernetworking-plugins # CNI plugins in /usr/lib/cni (bridge, host-local, portmap, loopback, ...)
	iptables                    # CNI bridge/portmap rules; iptables-save for the leak check
)
demo=(
	busybox-static # /bin/busybox: the offline test and demo images are built from it
)
e2e=(
	iproute2        # ip: netns, links (tests and leak check)
	docker-registry # a local registry for pull tests (and the README's quick start as a mirror)
	apache2-utils   # htpasswd for the registry's auth tests
	time            # /usr/bin/time: a child's own peak memory (the bounded-input test)
	openssl         # the cluster tests: cluster-anchor's start.sh makes the control plane's CA and certificates
	curl            # the cluster tests: start.sh waits for etcd's /health
)
dev=(
	libgpgme-dev # go.podman.io/image's default GPG mechanism (cgo): make builds without it (-tags containers_image_openpgp)
	pkg-config   # cgo finds gpgme with it
)
vm=(
	qemu-system-x86  # make test-vm: the amd64 guest, under software emulation
	seabios          # its firmware (only recommended by qemu-system-x86)
	qemu-system-arm  # make test-vm ARCH=arm64: qemu-system-aarch64
	qemu-utils       # qemu-img: the guest's overlay disk of each run
	debootstrap      # the guest's root file system, from the host's apt source
	qemu-user-static # an arm64 guest's debootstrap second stage on an amd64 host
	e2fsprogs        # mkfs.ext4 -d: the guest's disk image
)

usage() {
	echo "usage: $0 runtime|demo|e2e|vm|dev|test ..." >&2
	exit 2
}
[ $# -gt 0 ] || usage
pkgs=()
for set in "$@"; do
	case "$set" in
	runtime) pkgs+=("${runtime[@]}") ;;
	demo) pkgs+=("${demo[@]}") ;;
	e2e) pkgs+=("${runtime[@]}" "${demo[@]}" "${e2e[@]}") ;;
	vm) pkgs+=("${vm[@]}") ;;
	dev) pkgs+=("${dev[@]}") ;;
	test) pkgs+=("${runtime[@]}" "${demo[@]}" "${e2e[@]}" "${vm[@]}" "${dev[@]}") ;;
	*) usage ;;
	esac
done

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' &&
		! [[ " ${missing[*]} " == *" $p "* ]]; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		exec sudo "$0" "$@"
	fi
	echo "deps: missing packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "deps: apt-get failed" >&2
	exit 1
fi
