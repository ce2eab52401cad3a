#!/usr/bin/env bash
# Builds (once) the Debian 12 guest of `make test-vm` for one architecture and
# prints the directory holding it: disk.raw (ext4, the root file system),
# vmlinuz and initrd.img (the Debian kernel installed in it, for qemu -kernel).
#
#   vm/rootfs.sh ARCH CACHE_DIR        ARCH: amd64 or arm64
#
# The guest is made with debootstrap from the apt source the host already uses
# (the first URI of /etc/apt/sources.list.d/debian.sources, else of
# /etc/apt/sources.list), nothing else is downloaded. It is cached as
# CACHE_DIR/ARCH-KEY, KEY a hash of the architecture, the mirror, the package
# list and this script (the guest's setup is part of it): a change to any of
# them builds a new one and removes the older ones of that architecture.
# Downloaded packages are kept in CACHE_DIR/debs-ARCH for the next build.
# An arm64 guest on an amd64 host needs qemu-user-static for debootstrap's
# second stage: its binfmt_misc entry is registered for the build and
# removed afterwards if this script registered it.
set -euo pipefail
export LC_ALL=C

arch=${1:?usage: $0 ARCH CACHE_DIR}
cache=${2:?usage: $0 ARCH CACHE_DIR}
case "$arch" in
amd64 | arm64) ;;
*) echo "rootfs: unsupported ARCH $arch (amd64, arm64)" >&2; exit 2 ;;
esac

# What runs in the guest: systemd as init, the Debian kernel, containerd and
# runc as the distribution ships them, the CNI plugins and iptables that
# podrun's network uses; busybox-static for the test images (built in the
# guest by tools/mkimage from it), jq and procps for the tests.
packages=(
	systemd systemd-sysv udev dbus kmod
	"linux-image-$arch" initramfs-tools zstd
	containerd runc containernetworking-plugins iptables iproute2
	busybox-static jq procps
)

mirror() {
	local uri=""
	if [ -r /etc/apt/sources.list.d/debian.sources ]; then
		uri=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
	fi
	if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
		uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' /etc/apt/sources.list)
	fi
	echo "${uri:-http://deb.debian.org/debian}"
}
mirror=$(mirror)

key=$({ echo "$arch $mirror ${packages[*]}"; cat "$0"; } | sha256sum | cut -c1-16)
dir="$cache/$arch-$key"
if [ -f "$dir/ok" ]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$cache" "$cache/debs-$arch"
exec 8>"$cache/build-$arch.lock"
flock 8
if [ -f "$dir/ok" ]; then # built while we waited
	echo "$dir"
	exit 0
fi

t0=$(date +%s)
echo "rootfs: building the Debian 12 $arch guest in $dir (debootstrap from $mirror; cached for later runs)" >&2
work="$cache/.build-$arch"
root="$work/root"
registered=""
cleanup() {
	local m
	for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	if [ -n "$registered" ] && [ -e "/proc/sys/fs/binfmt_misc/$registered" ]; then
		echo -1 >"/proc/sys/fs/binfmt_misc/$registered" || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
cleanup
mkdir -p "$work"

# Two stages, so that the initramfs is set up before the kernel's package
# builds it: only the drivers the guest boots from (an initramfs of every
# module takes over ten minutes to make under qemu-user, and is made twice).
if [ "$arch" = arm64 ] && [ "$(dpkg --print-architecture)" != arm64 ]; then
	# debootstrap's second stage runs the guest's binaries: through
	# qemu-aarch64-static, registered with binfmt_misc (F: the interpreter
	# is opened now, so it works inside the chroot).
	if ! mountpoint -q /proc/sys/fs/binfmt_misc; then
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	fi
	if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
		conf=/usr/lib/binfmt.d/qemu-aarch64.conf
		[ -r "$conf" ] || { echo "rootfs: $conf missing (apt-get install qemu-user-static)" >&2; exit 1; }
		grep -v '^#' "$conf" | head -n1 >/proc/sys/fs/binfmt_misc/register
		registered=qemu-aarch64
	fi
fi

log="$work/debootstrap.log"
include=$(IFS=,; echo "${packages[*]}")
if ! debootstrap --arch="$arch" --variant=minbase --include="$include" \
	--cache-dir="$cache/debs-$arch" --foreign bookworm "$root" "$mirror" >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	[ -f "$root/debootstrap/debootstrap.log" ] && tail -n 40 "$root/debootstrap/debootstrap.log" >&2
	echo "rootfs: debootstrap failed" >&2
	exit 1
fi
mkdir -p "$root/etc/initramfs-tools/conf.d" "$root/etc/initramfs-tools/hooks"
echo MODULES=list >"$root/etc/initramfs-tools/conf.d/podrun-vm.conf"
cat >"$root/etc/initramfs-tools/hooks/podrun-vm" <<'HOOK'
#!/bin/sh
# The drivers of qemu's virtio disk and the root file system (MODULES=list).
case "$1" in prereqs) exit 0 ;; esac
. /usr/share/initramfs-tools/hook-functions
manual_add_modules virtio_pci virtio_blk ext4 crc32c_generic
HOOK
chmod 0755 "$root/etc/initramfs-tools/hooks/podrun-vm"
if ! chroot "$root" /debootstrap/debootstrap --second-stage >>"$log" 2>&1; then
	tail -n 40 "$log" >&2
	[ -f "$root/debootstrap/debootstrap.log" ] && tail -n 40 "$root/debootstrap/debootstrap.log" >&2
	echo "rootfs: debootstrap --second-stage failed" >&2
	exit 1
fi
echo "rootfs: debootstrap done after $(($(date +%s) - t0)) s" >&2

# The guest's setup: name, network (qemu's user network, a static address),
# the root file system, and the unit that runs the tests from the 9p share
# and powers the guest off.
echo podrun-vm >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tpodrun-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
echo 'nameserver 10.0.2.3' >"$root/etc/resolv.conf"
printf '/dev/vda\t/\text4\trw,errors=remount-ro\t0\t1\n' >"$root/etc/fstab"
mkdir -p "$root/etc/systemd/network"
cat >"$root/etc/systemd/network/10-eth0.network" <<'NET'
[Match]
Name=eth0

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
DNS=10.0.2.3
LinkLocalAddressing=no
IPv6AcceptRA=no
NET
ln -sf /lib/systemd/system/systemd-networkd.service "$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
# No getty on the console: the tests write there.
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@.service"
ln -sf /dev/null "$root/etc/systemd/system/getty@.service"
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/volatile.conf"
mkdir -p "$root/mnt/share"
cat >"$root/usr/local/sbin/podrun-vm-boot" <<'BOOT'
#!/bin/sh
# Runs the tests of `make test-vm` from the host's 9p share, then powers off.
modprobe 9pnet_virtio 2>/dev/null
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 share /mnt/share; then
	bash /mnt/share/guest/test.sh >/dev/console 2>&1
	sync
else
	echo "podrun-vm: cannot mount the 9p share" >/dev/console
fi
systemctl poweroff --no-block
BOOT
chmod 0755 "$root/usr/local/sbin/podrun-vm-boot"
cat >"$root/etc/systemd/system/podrun-vm.service" <<'UNIT'
[Unit]
Description=podrun: the tests of make test-vm
After=containerd.service systemd-networkd.service
Wants=containerd.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/podrun-vm-boot
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/podrun-vm.service "$root/etc/systemd/system/multi-user.target.wants/podrun-vm.service"
rm -f "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*_Packages

# The kernel and initramfs for qemu -kernel/-initrd; the file system as an ext4 image.
mkdir -p "$work/out"
cp "$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n1)" "$work/out/vmlinuz"
cp "$(ls "$root"/boot/initrd.img-* | sort -V | tail -n1)" "$work/out/initrd.img"
chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' >"$work/out/packages.txt" 2>/dev/null ||
	echo "(dpkg-query failed)" >"$work/out/packages.txt"
for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
	umount -l "$m"
done
truncate -s 6G "$work/out/disk.raw"
mkfs.ext4 -q -F -L podrun-root -d "$root" "$work/out/disk.raw"
touch "$work/out/ok"

for old in "$cache/$arch"-*; do
	[ "$old" != "$dir" ] && [ -d "$old" ] && rm -rf "$old"
done
rm -rf "$dir"
mv "$work/out" "$dir"
echo "rootfs: $arch guest ready after $(($(date +%s) - t0)) s: $dir" >&2
echo "$dir"
