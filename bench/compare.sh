#!/usr/bin/env bash
# compare.sh: podrun beside `podman kube play` and a `ctr run` floor, on the
# same stand-in image, alternately in one run (issue 12's `make
# bench-compare`). It prints medians and ratios; it asserts nothing.
#
# Workloads, each as one manifest file read by both tools unchanged:
#   one    a pod of one container (a shell that exits at once on SIGTERM)
#   four   a pod of four such containers
#   init   a pod with an init container (`true`) before one such container
#   ten    ten one-container pods in one file
# For each: `podrun up -d FILE` (containers started, as `podman kube play`
# returns) and `podman kube play FILE`, then `podrun down FILE` and `podman
# kube down FILE`; and, as the floor, `ctr run -d` of one container on
# podrun's containerd. RUNS rounds (default 10) after one warm-up round, the
# tools alternating within each round.
#
# podman (Debian's 4.3, installed from apt by this script if missing: for
# the benchmark only) runs with a storage root, run root and CNI config dir
# of its own under the temp dir, cgroupfs and no events; podrun runs on a
# private containerd (lib.sh) with its own bridge. The load average is
# printed before and after.
#
# BEFORE=<git revision> adds that revision's podrun (built from `git
# archive`) to every round, on the same containerd and state, so that a
# change is measured before and after in one run.
#
# Run it through the e2e lock: `make bench-compare`. Everything it starts
# is stopped by PID, everything it made is removed on any exit; it never
# kills by name; traffic stays on the host.
set -euo pipefail

RUNS=${RUNS:-10}
NS=podrun-bench-compare
IMAGE=podrun.bench/busybox:1

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_require_root bench-compare
bench_require_tools containerd ctr runc setpriv setsid go
# podman's bridges and host-local directories that exist already are left
# alone; those the benchmark makes are removed.
podman_bridges() { ip -o link show type bridge 2>/dev/null | awk -F': ' '$2 ~ /^(cni-)?podman/ { print $2 }'; }
podman_ipam() { ls -d /var/lib/cni/networks/podman* 2>/dev/null || true; }
BRIDGES_BEFORE=$(podman_bridges)
IPAM_BEFORE=$(podman_ipam)
INSTALLED=0
if ! command -v podman >/dev/null; then
	# Installed for this benchmark only, and purged at the end: its package
	# puts a network config in /etc/cni/net.d, which podrun would use.
	log "installing podman from apt (for this benchmark only)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman catatonit >&2
	INSTALLED=1
fi
P=()

cleanup() {
	local rc=$? f
	set +e
	trap - EXIT INT TERM
	if [[ -n $TMP && -d $TMP/m ]]; then
		for f in "$TMP"/m/*.yaml; do
			[[ -e $f ]] || continue
			timeout 120 "$TMP/podrun" "${G[@]}" down --grace-period 0 "$f" >/dev/null 2>&1
			((${#P[@]})) && timeout 120 "${P[@]}" kube down "$f" >/dev/null 2>&1
		done
		timeout 60 ctr -a "$SOCK" -n "$NS" task kill -s KILL cmp-floor >/dev/null 2>&1
		timeout 60 ctr -a "$SOCK" -n "$NS" task rm -f cmp-floor >/dev/null 2>&1
		timeout 60 ctr -a "$SOCK" -n "$NS" container rm cmp-floor >/dev/null 2>&1
	fi
	if ((${#P[@]})); then
		timeout 120 "${P[@]}" pod rm -a -f >/dev/null 2>&1
		timeout 120 "${P[@]}" rm -a -f >/dev/null 2>&1
		timeout 120 "${P[@]}" system reset -f >/dev/null 2>&1
	fi
	for f in $(podman_bridges); do
		grep -qx "$f" <<<"$BRIDGES_BEFORE" || ip link del "$f"
	done
	for f in $(podman_ipam); do
		grep -qx "$f" <<<"$IPAM_BEFORE" || rm -rf "$f"
	done
	if ((INSTALLED)); then
		log "cleanup: purging the podman this benchmark installed"
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q --autoremove podman catatonit >/dev/null 2>&1
	fi
	bench_stop_containerd
	bench_remove_tmp
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bench_make_tmp
bench_build
if [[ -n ${BEFORE:-} ]]; then
	mkdir -p "$TMP/before-src"
	git -C "$REPO" archive "$BEFORE" | tar -x -C "$TMP/before-src"
	(cd "$TMP/before-src" && CGO_ENABLED=0 go build -tags containers_image_openpgp -o "$TMP/podrun-before" .)
	rm -rf "$TMP/before-src"
	log "built podrun at $BEFORE (BEFORE) as well"
fi
bench_start_containerd
bench_import_image "$IMAGE"
mkdir -p "$TMP/podman/root" "$TMP/podman/run" "$TMP/podman/cni" "$TMP/podman/tmp" "$TMP/m"
# podman raises the containers' open-file and process limits by default,
# which runc is not permitted to set here: it gets containerd's default
# (nofile 1024, as podrun's containers) and a process limit.
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n' >"$TMP/podman/containers.conf"
export CONTAINERS_CONF=$TMP/podman/containers.conf
P=(podman --root "$TMP/podman/root" --runroot "$TMP/podman/run" --tmpdir "$TMP/podman/tmp"
	--cni-config-dir "$TMP/podman/cni" --network-backend cni --cgroup-manager cgroupfs
	--events-backend none --log-level error)
"${P[@]}" load -q -i "$TMP/busybox.tar" >&2

# ---- the workloads ----
container() { # NAME
	cat <<EOF
  - name: $1
    image: $IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
EOF
}
pod() { # NAME CONTAINERS [INIT]
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  terminationGracePeriodSeconds: 2\n' "$1"
	if [[ -n ${3:-} ]]; then
		printf '  initContainers:\n  - name: init\n    image: %s\n    command: ["true"]\n' "$IMAGE"
	fi
	printf '  containers:\n'
	local i
	for ((i = 0; i < $2; i++)); do container "c$i"; done
}
pod cmp-one 1 >"$TMP/m/one.yaml"
pod cmp-four 4 >"$TMP/m/four.yaml"
pod cmp-init 1 init >"$TMP/m/init.yaml"
for i in $(seq 0 9); do
	pod "cmp-ten-$i" 1
	[[ $i -lt 9 ]] && echo ---
done >"$TMP/m/ten.yaml"
WORKLOADS=(one four init ten)

# ---- timing ----
now_us() {
	local t=$EPOCHREALTIME
	printf -v "$1" '%d' $((${t%[.,]*} * 1000000 + 10#${t#*[.,]}))
}
# timed KEY CMD...: runs CMD, appends its wall time (µs) to $TMP/t.KEY when
# recording; fails the script if CMD fails.
RECORD=0
timed() {
	local key=$1 t0 t1
	shift
	now_us t0
	"$@" >"$TMP/last.out" 2>"$TMP/last.err" || { cat "$TMP/last.err" >&2; die "$key: $* failed"; }
	now_us t1
	((RECORD)) && echo $((t1 - t0)) >>"$TMP/t.$key"
	return 0
}
# tried KEY CMD...: timed, but a failure is counted (and its first line
# kept) instead of ending the benchmark: podman 4.3's kube play fails now and
# then on its own (an init container it removes while still running).
FAILS=0
tried() {
	local key=$1 t0 t1
	shift
	now_us t0
	if ! "$@" >"$TMP/last.out" 2>"$TMP/last.err"; then
		FAILS=$((FAILS + 1))
		log "$key failed (not counted): $(head -n 1 "$TMP/last.err")"
		return 1
	fi
	now_us t1
	((RECORD)) && echo $((t1 - t0)) >>"$TMP/t.$key"
	return 0
}
median() { # KEY -> ms, one decimal
	sort -n "$TMP/t.$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m / 1000 }'
}

round() {
	local w f
	for w in "${WORKLOADS[@]}"; do
		f=$TMP/m/$w.yaml
		timed "podrun.up.$w" "$TMP/podrun" "${G[@]}" up -d "$f"
		timed "podrun.down.$w" "$TMP/podrun" "${G[@]}" down "$f"
		if [[ -n ${BEFORE:-} ]]; then
			timed "before.up.$w" "$TMP/podrun-before" "${G[@]}" up -d "$f"
			timed "before.down.$w" "$TMP/podrun-before" "${G[@]}" down "$f"
		fi
		if tried "podman.up.$w" "${P[@]}" kube play "$f"; then
			tried "podman.down.$w" "${P[@]}" kube down "$f" || true
		else
			"${P[@]}" kube down "$f" >/dev/null 2>&1 || true
		fi
	done
	timed floor.up ctr -a "$SOCK" -n "$NS" run -d "$IMAGE" cmp-floor sh -c "trap 'exit 0' TERM; sleep 3600 & wait"
	timed floor.down sh -c "ctr -a '$SOCK' -n '$NS' task rm -f cmp-floor >/dev/null && ctr -a '$SOCK' -n '$NS' container rm cmp-floor"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before: $LOAD_BEFORE"
log "warm-up round (podman builds its pause image)"
round
RECORD=1
for ((r = 1; r <= RUNS; r++)); do
	log "round $r of $RUNS"
	round
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

printf '\n%s rounds, medians (ms); load average before %s, after %s\n' "$RUNS" "$LOAD_BEFORE" "$LOAD_AFTER"
printf '%-8s %12s %12s %8s %14s %14s %8s\n' workload "podrun up" "podman play" ratio "podrun down" "podman down" ratio
for w in "${WORKLOADS[@]}"; do
	pu=$(median "podrun.up.$w") mu=$(median "podman.up.$w") pd=$(median "podrun.down.$w") md=$(median "podman.down.$w")
	printf '%-8s %12s %12s %8s %14s %14s %8s\n' "$w" "$pu" "$mu" "$(awk -v a="$pu" -v b="$mu" 'BEGIN { printf "%.2f", a / b }')" \
		"$pd" "$md" "$(awk -v a="$pd" -v b="$md" 'BEGIN { printf "%.2f", a / b }')"
done
if [[ -n ${BEFORE:-} ]]; then
	printf '%-8s %12s %12s %14s %14s   (podrun at %s, same rounds)\n' workload "before up" "after up" "before down" "after down" "$BEFORE"
	for w in "${WORKLOADS[@]}"; do
		printf '%-8s %12s %12s %14s %14s\n' "$w" "$(median "before.up.$w")" "$(median "podrun.up.$w")" "$(median "before.down.$w")" "$(median "podrun.down.$w")"
	done
fi
printf '%-8s %12s %12s %8s %14s\n' floor "$(median floor.up)" "" "" "$(median floor.down)"
printf 'podman failures not counted: %d\n' "$FAILS"
printf '(floor: ctr run -d of one container on the same containerd; its "down" is task rm -f (SIGKILL) + container rm)\n'
