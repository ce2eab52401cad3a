#!/usr/bin/env bash
# memory.sh: what a pod costs the node in memory (issue 31). For each podrun
# binary (the working tree's, and BEFORE=<git revision>'s when set) and each
# case below, N one-container pods (busybox `sleep`, no probes) are started,
# left SETTLE seconds (default 10), and the proportional set size (Pss, from
# /proc/PID/smaps_rollup: shared pages divided among their sharers) of every
# process that exists for them is summed by kind:
#
#   containerd      the private containerd (restarted before each case)
#   shims           containerd-shim-runc-v2 serving it
#   log/io          podrun's processes that write the containers' logs and
#                   keep their streams (`podrun cri-log`, `podrun cri-io`)
#   pause           podrun's pause processes (none for these pods)
#   daemon          `podrun daemon` (daemon cases only)
#   containers      the containers' own processes (shown, not counted in
#                   the node's cost per pod: they are the workload)
#
# Cases: `up` of one file with 20 pods, `up` with 50, and the daemon with
# 50 pods (one file each, moved in at once); CASES="up:20 daemon:20" picks.
# Per pod = (containerd + shims + log/io + pause + daemon) / N. It prints
# figures only: it asserts no threshold.
#
# Runs on a PRIVATE containerd (see lib.sh) with its own podrun root, run
# dir, log dir, namespace and an empty CNI config dir. Everything it starts is
# stopped by PID, every pod is taken down and the temp dir removed on any
# exit. Needs root: `make bench-memory` (through the e2e lock).
set -euo pipefail

CASES=${CASES:-"up:20 up:50 daemon:50"}
SETTLE=${SETTLE:-10}
READY_TIMEOUT=${READY_TIMEOUT:-300}
NS=podrun-bench-memory
IMAGE=podrun.bench/busybox:1

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_require_root bench-memory
bench_require_tools containerd ctr runc jq curl setpriv setsid go

D_PID=""
CUR_FILE="" # the manifests of the case running, for the safety net
CUR_BIN=""
BINS=()

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	stop_pid "$D_PID" "podrun daemon (--stop-pods-on-exit)" 180
	if [[ -n $CTRD_PID ]] && alive "$CTRD_PID" && [[ -n $CUR_BIN ]]; then
		left=$("$CUR_BIN" "${G[@]}" ps -a -o name 2>/dev/null | sed 's|^pod/||') || left=""
		# shellcheck disable=SC2086
		[[ -n $left ]] && timeout 300 "$CUR_BIN" "${G[@]}" down --grace-period 0 $left >&2
	fi
	for b in "${BINS[@]}"; do
		for k in $(keepers_of "${b#*:}"); do stop_pid "$k" "the stream keeper" 30 || true; done
	done
	((rc != 0)) && bench_dump_containerd_log
	bench_stop_containerd
	bench_remove_tmp
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bench_make_tmp
G+=(--run-dir "$TMP/run")
bench_build
BINS=("now:$TMP/podrun")
if [[ -n ${BEFORE:-} ]]; then
	mkdir -p "$TMP/before-src"
	git -C "$REPO" archive "$BEFORE" | tar -x -C "$TMP/before-src"
	(cd "$TMP/before-src" && CGO_ENABLED=0 go build -tags containers_image_openpgp -o "$TMP/podrun-before" .)
	rm -rf "$TMP/before-src"
	log "built podrun at $BEFORE (BEFORE) as well"
	BINS=("before:$TMP/podrun-before" "${BINS[@]}")
fi
bench_start_containerd
bench_import_image "$IMAGE"

pod_yaml() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {app: memory-bench}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: $IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 36000 & wait"]
EOF
}

# running BIN: how many pods `ps` shows Running.
running() {
	"$1" "${G[@]}" ps -o json 2>/dev/null | jq '[.items[] | select(.status.phase == "Running")] | length' 2>/dev/null || echo 0
}

# pss PID...: the summed Pss in kB (processes gone meanwhile count 0).
pss() {
	local p t=0 v
	for p in "$@"; do
		v=$(awk '$1 == "Pss:" { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null) || v=0
		t=$((t + ${v:-0}))
	done
	echo "$t"
}

# descendants PID: every process below PID.
descendants() {
	local c
	for c in $(cat "/proc/$1/task/"*/children 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

# measure LABEL BIN N: one row of figures.
measure() {
	local label=$1 bin=$2 n=$3 shims=() logio=() pause=() ctrs=() p a exe
	mapfile -t shims < <(shims_of_address)
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
		[[ $exe == "$bin" ]] || continue
		a=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
		set -- $a
		case ${2:-} in
		cri-log | cri-io) logio+=("$p") ;;
		pause) pause+=("$p") ;;
		esac
	done
	for p in "${shims[@]}"; do
		for a in $(descendants "$p"); do
			exe=$(readlink "/proc/$a/exe" 2>/dev/null) || continue
			[[ $exe == "$bin" ]] || ctrs+=("$a")
		done
	done
	local c s l pa d k
	c=$(pss "$CTRD_PID")
	s=$(pss "${shims[@]}")
	l=$(pss "${logio[@]}")
	pa=$(pss "${pause[@]}")
	d=0
	[[ -n $D_PID ]] && d=$(pss "$D_PID")
	k=$(pss "${ctrs[@]}")
	awk -v L="$label" -v n="$n" -v c="$c" -v s="$s" -v ns="${#shims[@]}" -v l="$l" -v nl="${#logio[@]}" \
		-v pa="$pa" -v np="${#pause[@]}" -v d="$d" -v k="$k" 'BEGIN {
		m = 1024
		node = c + s + l + pa + d
		printf "%-16s %4d %9.1f %9.1f(%3d) %9.1f(%3d) %8.1f(%2d) %8.1f %9.1f | %8.2f %8.2f\n",
			L, n, c / m, s / m, ns, l / m, nl, pa / m, np, d / m, k / m, node / m / n, l / m / n
	}'
}

header() {
	printf '%-16s %4s %9s %14s %14s %12s %8s %9s | %8s %8s\n' case pods containerd "shims(n)" "log/io(n)" "pause(n)" daemon containers "per pod" "log/pod"
	printf '%-16s %4s %9s %14s %14s %12s %8s %9s | %8s %8s\n' "" "" MiB MiB MiB MiB MiB MiB MiB MiB
}

# wait_running BIN N
wait_running() {
	local deadline=$((SECONDS + READY_TIMEOUT)) r
	while :; do
		r=$(running "$1")
		((r >= $2)) && return 0
		((SECONDS < deadline)) || die "only $r of $2 pods Running after ${READY_TIMEOUT}s"
		nap 0.5
	done
}

restart_containerd() {
	bench_stop_containerd
	CTRD_PID=""
	bench_start_containerd
}

run_case() {
	local name=$1 bin=$2 mode=$3 n=$4 dir i
	restart_containerd
	dir=$TMP/m-$name-$mode-$n
	mkdir -p "$dir" "$TMP/stage"
	for i in $(seq -w 1 "$n"); do pod_yaml "mem-$i" >"$TMP/stage/mem-$i.yaml"; done
	CUR_BIN=$bin
	if [[ $mode == up ]]; then
		for i in "$TMP"/stage/*.yaml; do cat "$i"; echo '---'; done >"$dir/all.yaml"
		rm -f "$TMP"/stage/*.yaml
		CUR_FILE=$dir/all.yaml
		"$bin" "${G[@]}" up --timeout 10m "$CUR_FILE" >/dev/null 2>"$TMP/up.err" || { tail -n 20 "$TMP/up.err" >&2; die "up failed"; }
	else
		CUR_FILE=$dir
		setpriv --pdeathsig TERM setsid "$bin" "${G[@]}" daemon --manifest-dir "$dir" --stop-pods-on-exit \
			--listen "unix:$TMP/metrics.sock" >/dev/null 2>"$TMP/daemon.err" </dev/null &
		D_PID=$!
		local deadline=$((SECONDS + 60))
		until [[ $(curl -s -m 2 --unix-socket "$TMP/metrics.sock" http://localhost/readyz 2>/dev/null) == ok ]]; do
			alive "$D_PID" || die "podrun daemon exited during startup"
			((SECONDS < deadline)) || die "podrun daemon not ready within 60s"
			nap 0.1
		done
		mv "$TMP"/stage/*.yaml "$dir/"
	fi
	wait_running "$bin" "$n"
	nap "$SETTLE"
	measure "$name $mode" "$bin" "$n" >>"$TMP/rows"
	if [[ $mode == daemon ]]; then
		stop_pid "$D_PID" "podrun daemon (--stop-pods-on-exit)" 300
		D_PID=""
		rm -f "$TMP/metrics.sock"
		# A pod the daemon did not stop (it should have) goes with down.
		local left
		left=$("$bin" "${G[@]}" ps -a -o name 2>/dev/null | sed 's|^pod/||') || left=""
		if [[ -n $left ]]; then
			log "WARNING: pods left after the daemon's stop: down"
			# shellcheck disable=SC2086
			"$bin" "${G[@]}" down --grace-period 0 $left >/dev/null 2>&1 || true
		fi
	else
		"$bin" "${G[@]}" down --grace-period 0 "$CUR_FILE" >/dev/null 2>"$TMP/down.err" || { tail -n 20 "$TMP/down.err" >&2; die "down failed"; }
	fi
	CUR_FILE=""
	rm -rf "$dir"
	# The stream keeper outlives the pods (it idles out later): stop it, so
	# that the next case's binary starts and is measured with its own.
	local k
	for k in $(keepers_of "$bin"); do stop_pid "$k" "the stream keeper" 30 || true; done # not a child: wait says 127
}

# keepers_of BIN: the pids of the stream keepers (`podrun cri-io`) of BIN.
keepers_of() {
	local p a
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$1" ]] || continue
		a=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
		set -- $a
		[[ ${2:-} == cri-io ]] && echo "$p"
	done
	return 0
}

: >"$TMP/rows"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for c in $CASES; do
	for b in "${BINS[@]}"; do
		log "case ${c%%:*} with ${c#*:} pods, podrun ${b%%:*}"
		run_case "${b%%:*}" "${b#*:}" "${c%%:*}" "${c#*:}"
	done
done
printf '\nPss by kind of process (%s cores, load average before %s, after %s; settle %ss)\n' \
	"$(nproc)" "$LOAD0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$SETTLE"
header
cat "$TMP/rows"
