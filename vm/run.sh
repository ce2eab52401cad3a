#!/usr/bin/env bash
# make test-vm [ARCH=arm64]: podrun end to end on Debian 12 under qemu, as its
# users run it: systemd as init, cgroup v2 unified, Debian's containerd as a
# service, the shipped systemd unit.
#
# 1. vm/rootfs.sh makes (once, cached) the guest: debootstrap from the
#    host's apt source, the Debian kernel, containerd, runc, CNI plugins.
# 2. podrun and its systemd unit come from the release tarball of the
#    guest's architecture (PODRUN_TARBALL, made by `make dist`: what a board
#    is given); tools/mkimage is built for the guest (CGO_ENABLED=0); they go
#    into a share directory with vm/guest/test.sh and .ci/leakcheck.sh.
# 3. qemu boots the guest (software emulation, -accel tcg) from a qcow2
#    overlay over the cached image, the share as 9p; the guest's
#    podrun-vm.service runs test.sh and powers off. qemu's user network is
#    restricted (restrict=on): the guest reaches nothing outside itself.
# 4. The result is read from the share (out/plan, out/checks, out/done): it
#    passes only when every planned check passed and done was written.
#
# Environment: PODRUN_TARBALL (podrun-VERSION-linux-ARCH.tar.gz of `make
# dist`; `make test-vm` passes it), ARCH (amd64, arm64; default amd64), PODRUN_VM_CACHE (default
# /var/cache/podrun-vm), PODRUN_VM_TIMEOUT (seconds for the boot and the
# checks; default 1800 amd64, 3600 arm64), GO (default go).
# Everything is made under bin/vm-ARCH/, removed after a pass; after a failure
# console.log and out/ (each check's log, the guest's journal) stay there.
# One run at a time on a machine (flock on the cache's run.lock).
set -euo pipefail
export LC_ALL=C

# All in one function, read whole before it runs: editing this file while a
# run is in progress does not change what that run executes.
main() {
	cd "$(dirname "${BASH_SOURCE[0]}")/.."

	arch=${ARCH:-amd64}
	cache=${PODRUN_VM_CACHE:-/var/cache/podrun-vm}
	go=${GO:-go}
	case "$arch" in
	amd64)
		qemu=(qemu-system-x86_64 -M q35 -cpu max)
		console=ttyS0
		timeout=${PODRUN_VM_TIMEOUT:-1800}
		;;
	arm64)
		# pauth-impdef: pointer authentication with QEMU's own cheap hash
		# instead of the architected one, which is slow to emulate.
		qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on)
		console=ttyAMA0
		timeout=${PODRUN_VM_TIMEOUT:-3600}
		;;
	*)
		echo "test-vm: unsupported ARCH=$arch (amd64, arm64)" >&2
		exit 2
		;;
	esac
	tarball=${PODRUN_TARBALL:-}
	if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
		echo "test-vm: PODRUN_TARBALL=${tarball:-(unset)}: not a file; run it as make test-vm ARCH=$arch (make dist makes the tarball)" >&2
		exit 2
	fi
	case "$tarball" in
	*-linux-"$arch".tar.gz) ;;
	*)
		echo "test-vm: PODRUN_TARBALL=$tarball is not the $arch release" >&2
		exit 2
		;;
	esac
	if [ "$(id -u)" -ne 0 ]; then
		echo "test-vm: needs root (debootstrap, and the guest image is root's)" >&2
		exit 1
	fi

	mkdir -p "$cache"
	exec 9>"$cache/run.lock"
	if ! flock -n 9; then
		echo "test-vm: another test-vm run holds $cache/run.lock; one at a time" >&2
		exit 1
	fi

	t0=$(date +%s)
	elapsed() { echo "$(($(date +%s) - t0)) s"; }

	# rootfs.sh mounts binfmt_misc for an arm64 build on an amd64 host (and
	# removes the entry it registers); unmounted again if it was not mounted.
	binfmt_mounted=$(mountpoint -q /proc/sys/fs/binfmt_misc && echo yes || true)
	guest=$(vm/rootfs.sh "$arch" "$cache")
	if [ -z "$binfmt_mounted" ] && mountpoint -q /proc/sys/fs/binfmt_misc; then
		umount /proc/sys/fs/binfmt_misc || true
	fi

	run=$PWD/bin/vm-$arch
	share=$run/share
	qpid=""
	passed=""
	cleanup() {
		if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
			kill -TERM "$qpid" 2>/dev/null || true
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				kill -0 "$qpid" 2>/dev/null || break
				sleep 0.5
			done
			kill -KILL "$qpid" 2>/dev/null || true
			wait "$qpid" 2>/dev/null || true
		fi
		if [ "$passed" = yes ]; then
			rm -rf "$run"
		elif [ -d "$run" ]; then
			rm -rf "$run/overlay.qcow2" "$share/podrun" "$share/mkimage"
			echo "test-vm: kept the guest's console and the checks' output in $run (console.log, share/out/)" >&2
		fi
	}
	trap cleanup EXIT
	trap 'exit 130' INT TERM

	rm -rf "$run"
	mkdir -p "$share/guest" "$share/out"
	goarch=$arch
	# The release's binary and unit, as a board gets them (the unit names
	# /usr/local/bin/podrun, where test.sh installs it).
	top=$(basename "$tarball" .tar.gz) # podrun-VERSION-linux-ARCH/, as make dist names it
	mkdir -p "$run/release"
	tar -xzf "$tarball" -C "$run/release" "$top/bin/podrun" "$top/lib/systemd/system/podrun-daemon.service"
	install -m 0755 "$run/release/$top/bin/podrun" "$share/podrun"
	install -m 0644 "$run/release/$top/lib/systemd/system/podrun-daemon.service" "$share/podrun-daemon.service"
	rm -rf "$run/release"
	echo "test-vm: podrun and its unit from $tarball" >&2
	CGO_ENABLED=0 GOOS=linux GOARCH=$goarch "$go" build -trimpath -o "$share/mkimage" ./tools/mkimage
	echo "$arch" >"$share/arch"
	install -m 0755 vm/guest/test.sh "$share/guest/test.sh"
	install -m 0755 .ci/leakcheck.sh "$share/leakcheck.sh"
	qemu-img create -q -f qcow2 -F raw -b "$guest/disk.raw" "$run/overlay.qcow2"

	echo "test-vm: booting the Debian 12 $arch guest (software emulation; the checks' progress: $run/console.log)" >&2
	nice -n 10 "${qemu[@]}" -accel tcg -smp 2 -m 2048 \
		-nodefaults -no-user-config -display none -no-reboot \
		-serial "file:$run/console.log" \
		-kernel "$guest/vmlinuz" -initrd "$guest/initrd.img" \
		-append "root=/dev/vda rw rootwait console=$console net.ifnames=0 panic=-1 systemd.unified_cgroup_hierarchy=1 systemd.show_status=false" \
		-drive "file=$run/overlay.qcow2,if=virtio,format=qcow2,cache=unsafe" \
		-virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" \
		-netdev user,id=net0,restrict=on -device virtio-net-pci,netdev=net0,romfile= \
		-device virtio-rng-pci &
	qpid=$!

	boot=$(date +%s)
	timed_out=""
	while kill -0 "$qpid" 2>/dev/null; do
		if [ $(($(date +%s) - boot)) -ge "$timeout" ]; then
			timed_out=yes
			echo "test-vm: the guest did not finish within $timeout s: stopping qemu (pid $qpid)" >&2
			break
		fi
		sleep 2
	done
	qrc=0
	if [ -z "$timed_out" ]; then
		wait "$qpid" || qrc=$?
		qpid=""
	fi

	# The summary: every planned check with its result; one without is a failure.
	out=$share/out
	echo "test-vm: results ($arch, $(elapsed) in all):"
	if [ -s "$out/guest" ]; then
		echo "  guest: $(cat "$out/guest")"
	fi
	pass=0 fail=0
	if [ -s "$out/plan" ]; then
		while IFS= read -r name; do
			line=$(grep -E "^(PASS|FAIL) $name( |$)" "$out/checks" 2>/dev/null | tail -n1 || true)
			if [ -z "$line" ]; then
				line="FAIL $name (no result: the guest stopped before it)"
			fi
			echo "  $line"
			case "$line" in
			PASS*) pass=$((pass + 1)) ;;
			*)
				fail=$((fail + 1))
				echo "$line" | grep -q 'no result' || sed 's/^/      /' "$out/logs/$name.log" 2>/dev/null | grep -E 'FAIL|error|Error' | head -n 5 || true
				;;
			esac
		done <"$out/plan"
	else
		echo "  FAIL boot (the guest never started the checks; see $run/console.log)"
		fail=$((fail + 1))
	fi
	if [ ! -s "$out/done" ]; then
		echo "  FAIL finish (the guest did not finish the checks${timed_out:+: timed out after $timeout s, qemu stopped}${timed_out:-; qemu exit $qrc})"
		fail=$((fail + 1))
		tail -n 30 "$run/console.log" 2>/dev/null | sed 's/^/      console: /' || true
	fi
	echo "test-vm: $pass passed, $fail failed"
	if [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]; then
		passed=yes
		exit 0
	fi
	exit 1
}

main "$@"
