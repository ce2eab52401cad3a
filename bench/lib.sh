# lib.sh: what the benchmark scripts under bench/ share. Sourced, not run:
#
#   set -euo pipefail
#   NS=...                        # the containerd namespace, before sourcing
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# It builds podrun into a temp dir, starts a PRIVATE containerd there (own
# config, root, state and socket; the CRI plugin disabled), imports the
# offline busybox test image, and takes all of it down again: containerd by
# PID, its shims by the socket they serve, mounts under the temp dir, the temp
# dir. It never kills by name.
#
# Globals it sets and the cleanup uses: REPO, TMP, SOCK, CTRD_PID, G (the
# podrun flags selecting the private containerd, namespace NS and the temp
# dir's root, log dir and empty CNI config dir), RUNC_NS_DIR(_EXISTED).

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# bench_require_root MAKE_TARGET
bench_require_root() {
	if [[ $(id -u) -ne 0 ]]; then
		die "needs root (containerd, runc, CNI, mounts): run 'sudo make $1'"
	fi
}

# bench_require_tools TOOL...
bench_require_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || die "$t is not installed (run 'make deps')"
	done
}

# ---- state the cleanup uses ----
TMP=""
CTRD_PID=""
SOCK=""
G=()
RUNC_NS_DIR=/run/containerd/runc/$NS
RUNC_NS_DIR_EXISTED=0
[[ -e $RUNC_NS_DIR ]] && RUNC_NS_DIR_EXISTED=1
# podrun's default bridge (the bench runs with an empty CNI config dir): removed
# at cleanup when the bench made it.
BRIDGE=podrun0
BRIDGE_EXISTED=0
ip link show "$BRIDGE" >/dev/null 2>&1 && BRIDGE_EXISTED=1

# alive PID: the process exists and is not a zombie.
alive() {
	local st
	[[ -r /proc/$1/stat ]] || return 1
	st=$(cut -d')' -f2- "/proc/$1/stat" 2>/dev/null | awk '{print $1}') || return 1
	[[ -n $st && $st != Z && $st != X ]]
}

# wait_gone PID SECONDS: wait until PID has exited; 1 if it is still there.
wait_gone() {
	local pid=$1 deadline=$((SECONDS + $2))
	while alive "$pid"; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# stop_pid PID WHAT SECONDS: SIGTERM a process we started, SIGKILL it if it
# is still there after SECONDS, then reap it.
stop_pid() {
	local pid=$1 what=$2 grace=$3
	[[ -n $pid ]] || return 0
	if alive "$pid"; then
		log "cleanup: stopping $what (pid $pid) with SIGTERM"
		kill -TERM "$pid"
		if ! wait_gone "$pid" "$grace"; then
			log "cleanup: $what (pid $pid) still running after ${grace}s: SIGKILL"
			kill -KILL "$pid"
			wait_gone "$pid" 10
		fi
	fi
	wait "$pid" 2>/dev/null
}

# nap SECONDS: an interruptible sleep (signals are handled at once).
nap() {
	sleep "$1" &
	wait $! || true
}

# shims_of_address: PIDs of containerd shims serving our private socket.
shims_of_address() {
	local p argv
	[[ -n $SOCK ]] || return 0
	for p in /proc/[0-9]*; do
		argv=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		case $argv in
		*containerd-shim*" -address $SOCK "* | *containerd-shim*" -address $SOCK") echo "${p#/proc/}" ;;
		esac
	done
}

# mounts_under DIR: mount points under DIR, deepest first.
mounts_under() {
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print length($5) " " $5 }' /proc/self/mountinfo |
		sort -rn | cut -d' ' -f2-
}

# bench_make_tmp: the temp dir with the podrun state dirs, SOCK and G.
bench_make_tmp() {
	TMP=$(mktemp -d /tmp/podrun-bench-XXXXXX)
	TMP=$(cd "$TMP" && pwd -P)
	SOCK=$TMP/containerd.sock
	mkdir -p "$TMP/root" "$TMP/logs" "$TMP/cni-conf" "$TMP/containerd"
	G=(--address "$SOCK" --containerd-namespace "$NS" --root "$TMP/root" --log-dir "$TMP/logs" --cni-conf-dir "$TMP/cni-conf")
	log "temp dir $TMP"
}

# bench_build: podrun (static) and mkimage into the temp dir, from the
# working tree, or from the source tree PODRUN_SRC names (e.g. an export of
# one commit: git archive HEAD | tar -x -C DIR).
bench_build() {
	local t0=$SECONDS src=${PODRUN_SRC:-$REPO}
	[[ $src == "$REPO" ]] || log "building from PODRUN_SRC=$src"
	(cd "$src" && CGO_ENABLED=0 go build -tags containers_image_openpgp -o "$TMP/podrun" . && go build -o "$TMP/mkimage" ./tools/mkimage)
	log "built podrun and mkimage in $((SECONDS - t0))s"
}

# bench_start_containerd: the private containerd, as the e2e harness starts it.
bench_start_containerd() {
	local deadline
	cat >"$TMP/containerd.toml" <<EOF
version = 2
root = "$TMP/containerd/root"
state = "$TMP/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "$TMP/containerd/opt"
EOF
	# Own session (a Ctrl-C reaches the script, which stops things in order);
	# SIGKILL when the script dies, like the harness's Pdeathsig. Both exec, so $!
	# is containerd's PID.
	setpriv --pdeathsig KILL setsid containerd --config "$TMP/containerd.toml" >"$TMP/containerd.log" 2>&1 </dev/null &
	CTRD_PID=$!
	deadline=$((SECONDS + 20))
	until ctr -a "$SOCK" version >/dev/null 2>&1; do
		alive "$CTRD_PID" || die "containerd exited during startup; log:$(printf '\n'; tail -n 30 "$TMP/containerd.log")"
		((SECONDS < deadline)) || die "containerd did not answer on $SOCK within 20s"
		sleep 0.1
	done
	[[ $(readlink "/proc/$CTRD_PID/exe") == */containerd ]] || die "pid $CTRD_PID is not containerd"
	log "containerd (pid $CTRD_PID) answering on $SOCK"
}

# bench_import_image REF: the offline busybox test image, tagged REF.
bench_import_image() {
	"$TMP/mkimage" -o "$TMP/busybox.tar" -ref "$1" >&2
	"$TMP/podrun" "${G[@]}" image import "$TMP/busybox.tar" >&2
}

# bench_containers_left: how many containers our namespace still has (0 when
# containerd does not answer).
bench_containers_left() {
	ctr -a "$SOCK" -n "$NS" containers ls -q 2>/dev/null | wc -l
}

# bench_dump_containerd_log: containerd's errors, for a failed run.
bench_dump_containerd_log() {
	[[ -s $TMP/containerd.log ]] && { log "containerd log (last errors):"; grep -E 'level=(error|fatal)|panic' "$TMP/containerd.log" | tail -n 20 >&2; }
	return 0
}

# bench_stop_containerd: SIGTERM to our containerd by PID (SIGKILL after 15s).
bench_stop_containerd() {
	if [[ -n $CTRD_PID ]] && alive "$CTRD_PID"; then
		log "cleanup: stopping containerd (pid $CTRD_PID)"
		kill -TERM "$CTRD_PID"
		if ! wait_gone "$CTRD_PID" 15; then
			log "cleanup: containerd (pid $CTRD_PID) ignored SIGTERM for 15s: SIGKILL"
			kill -KILL "$CTRD_PID"
			wait_gone "$CTRD_PID" 10
		fi
	fi
	[[ -n $CTRD_PID ]] && wait "$CTRD_PID" 2>/dev/null
	return 0
}

# bench_remove_tmp: the shims of our socket, the runc state dir of our
# namespace (if we made it), every mount under the temp dir, the temp dir.
bench_remove_tmp() {
	local pid mp
	# Shims outlive containerd by design; any still serving our socket is ours.
	for pid in $(shims_of_address); do
		log "cleanup: shim pid $pid of our containerd still running: SIGKILL"
		kill -KILL "$pid"
	done
	if ((RUNC_NS_DIR_EXISTED == 0)) && [[ -d $RUNC_NS_DIR ]]; then
		rmdir "$RUNC_NS_DIR" 2>/dev/null
	fi
	if ((BRIDGE_EXISTED == 0)) && ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link del "$BRIDGE" || log "cleanup: cannot remove the bridge $BRIDGE"
	fi
	# podrun's parent cgroups of our namespace (/<namespace> in each hierarchy),
	# empty once every pod is down: cgroupfs directories go with rmdir only.
	local cg
	for cg in /sys/fs/cgroup/*/"$NS" /sys/fs/cgroup/"$NS"; do
		[[ -d $cg ]] || continue
		find "$cg" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
		rmdir "$cg" 2>/dev/null || log "cleanup: cannot remove the cgroup $cg"
	done
	if [[ -n $TMP && -d $TMP ]]; then
		while read -r mp; do
			[[ -n $mp ]] || continue
			umount -l "$mp" 2>/dev/null || log "cleanup: cannot unmount $mp"
		done < <(mounts_under "$TMP")
		rm -rf "$TMP" || log "cleanup: cannot remove $TMP"
	fi
	return 0
}
