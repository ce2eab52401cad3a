#!/usr/bin/env bash
# supervise-cpu.sh: the CPU cost of `podrun up --foreground` supervising pods.
#
# Runs PODS (default 20) pods, each one busybox container serving HTTP
# (busybox httpd) with a 1-second exec readinessProbe and a 1-second httpGet
# livenessProbe, under `podrun up --foreground` on a PRIVATE containerd (own config,
# root, state and socket under a temp dir, as the e2e harness does). Once all
# pods are Ready it samples the supervising process's CPU time
# (utime+stime from /proc/PID/stat) over WINDOW seconds (default 30) and
# prints it as seconds and as % of one core, with its resident memory. It also
# prints, labelled separately, the CPU of the shims, log drivers and the
# private containerd serving those pods. It prints figures only: it asserts no
# threshold.
#
# Needs root, containerd, runc, the CNI plugins and a static busybox (as
# `make test`). Run it through the e2e lock: `make bench-supervise`, i.e.
#   flock /tmp/podrun-e2e.lock bash bench/supervise-cpu.sh
#
# Everything it starts is stopped by PID and everything it made is removed on
# any exit (trap): `up --foreground` gets SIGTERM (pods stop gracefully), then the
# private containerd, then whatever is still mounted under the temp dir is
# unmounted and the temp dir removed. It never kills by name and sends
# traffic only to the IPs of its own pods.
set -euo pipefail

PODS=${PODS:-20}
WINDOW=${WINDOW:-30}         # seconds of CPU sampling
SETTLE=${SETTLE:-5}          # seconds between "all Ready" and the window
READY_TIMEOUT=${READY_TIMEOUT:-300} # seconds; past it the window is measured anyway, flagged
NS=podrun-bench              # containerd namespace
IMAGE=podrun.bench/busybox:1

START_NS=$(date +%s%N)
HZ=$(getconf CLK_TCK)

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_require_root bench-supervise
bench_require_tools containerd ctr runc jq curl setpriv setsid go getconf

# ---- state the trap cleans up (besides lib.sh's) ----
UP_PID=""
MANIFEST=""

cleanup() {
	local rc=$? left
	set +e
	trap - EXIT INT TERM
	stop_pid "$UP_PID" "podrun up --foreground" 120
	if ((rc != 0)) && [[ -n $TMP ]]; then
		[[ -s $TMP/up.err ]] && { log "podrun up --foreground stderr (last 30 lines):"; tail -n 30 "$TMP/up.err" >&2; }
		bench_dump_containerd_log
	fi
	if [[ -n $CTRD_PID ]] && alive "$CTRD_PID"; then
		# Safety net: remove any pod of ours that is still there (netns, veth, IPAM
		# reservations live outside the temp dir). Idempotent.
		left=$(bench_containers_left)
		if ((left > 0)) && [[ -s $MANIFEST ]]; then
			log "cleanup: $left containers left: podrun down --grace-period 0"
			timeout 180 "$TMP/podrun" "${G[@]}" down --grace-period 0 "$MANIFEST" >&2
		fi
	fi
	bench_stop_containerd
	bench_remove_tmp
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bench_make_tmp
MANIFEST=$TMP/pods.yaml

# ---- build ----
bench_build

# ---- private containerd, as the e2e harness starts it ----
bench_start_containerd

# ---- image ----
bench_import_image "$IMAGE"

# ---- manifest: PODS documents in one file ----
: >"$MANIFEST"
for i in $(seq -w 1 "$PODS"); do
	cat >>"$MANIFEST" <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: sup-$i
  namespace: default
  labels: {app: supervise-bench}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: web
    image: $IMAGE
    imagePullPolicy: IfNotPresent
    # busybox httpd as PID 1 would ignore SIGTERM; the shell exits on it.
    command: ["sh", "-c", "mkdir -p /tmp/www && echo sup-$i > /tmp/www/index.html && touch /tmp/ready && trap 'exit 0' TERM; httpd -f -p 8080 -h /tmp/www & wait"]
    ports:
    - {name: http, containerPort: 8080}
    readinessProbe:
      exec: {command: ["cat", "/tmp/ready"]}
      periodSeconds: 1
    livenessProbe:
      httpGet: {path: /, port: http}
      periodSeconds: 1
EOF
done
"$TMP/podrun" "${G[@]}" validate "$MANIFEST" >/dev/null

# ---- podrun up --foreground ----
# Own session too; SIGTERM (a graceful stop) if the script dies.
up_start=$SECONDS
setpriv --pdeathsig TERM setsid "$TMP/podrun" "${G[@]}" up --foreground --timeout "$((READY_TIMEOUT + 120))s" "$MANIFEST" >"$TMP/up.out" 2>"$TMP/up.err" </dev/null &
UP_PID=$!
log "podrun up --foreground started (pid $UP_PID); waiting for $PODS pods to be Ready"

ready_count() {
	"$TMP/podrun" "${G[@]}" ps -o json 2>"$TMP/ps.err" | jq '[.items[] | select(.status.phase == "Running"
		and ((.status.containerStatuses // []) | length) > 0
		and all(.status.containerStatuses[]; .ready))] | length' 2>/dev/null || echo 0
}
deadline=$((SECONDS + READY_TIMEOUT))
ALL_READY=1
while :; do
	alive "$UP_PID" || die "podrun up --foreground exited before the pods were Ready"
	n=$(ready_count)
	if ((n == PODS)) && grep -q '^supervising' "$TMP/up.err"; then
		break
	fi
	if ((SECONDS >= deadline)); then
		# Measure anyway (the pods are still supervised), but say so loudly.
		ALL_READY=0
		ps_err=$(tail -n 1 "$TMP/ps.err")
		"$TMP/podrun" "${G[@]}" ps >&2 || true
		log "WARNING: only $n of $PODS pods Ready after ${READY_TIMEOUT}s${ps_err:+ (podrun ps: $ps_err)}"
		log "WARNING: measuring anyway; the figures are flagged NOT ALL READY"
		break
	fi
	nap 1
done
ready_after=$((SECONDS - up_start))
ready_start=$n
[[ $(readlink "/proc/$UP_PID/exe") == "$TMP/podrun" ]] || die "pid $UP_PID is not our podrun"
((ALL_READY == 0)) || log "all $PODS pods Ready after ~${ready_after}s"

# One request to each of our own pods, to check that they serve.
served=0
for ip in $("$TMP/podrun" "${G[@]}" ps -o json | jq -r '.items[].status.podIP // empty'); do
	if curl --noproxy '*' -sf -m 2 -o /dev/null "http://$ip:8080/"; then
		served=$((served + 1))
	fi
done
log "$served of $PODS pods answered HTTP on their pod IP"

# ---- the processes to sample ----
# Shims: the parents of our namespace's task PIDs, as reported by our containerd.
declare -A SHIM=()
task_pids=$(ctr -a "$SOCK" -n "$NS" task ls 2>/dev/null | awk 'NR > 1 && $2 > 0 { print $2 }')
for tp in $task_pids; do
	pp=$(awk '/^PPid:/ { print $2 }' "/proc/$tp/status" 2>/dev/null) || continue
	[[ -n $pp ]] && grep -qa -- "$SOCK" "/proc/$pp/cmdline" 2>/dev/null && SHIM[$pp]=1
done
SHIM_PIDS=("${!SHIM[@]}")
# Log drivers: the shims' children that run our podrun binary as `podrun cri-log`
# (not the tasks: the built-in pause is podrun's binary too).
declare -A TASK=()
for tp in $task_pids; do TASK[$tp]=1; done
LOGD_PIDS=()
for p in /proc/[0-9]*; do
	pid=${p#/proc/}
	[[ -z ${TASK[$pid]:-} ]] || continue
	pp=$(awk '/^PPid:/ { print $2 }' "$p/status" 2>/dev/null) || continue
	[[ -n $pp && -n ${SHIM[$pp]:-} ]] || continue
	[[ $(readlink "$p/exe" 2>/dev/null) == "$TMP/podrun" ]] || continue
	[[ $(tr '\0' ' ' 2>/dev/null <"$p/cmdline") == "$TMP/podrun cri-log "* ]] && LOGD_PIDS+=("$pid")
done

# ticks PID: "utime stime cutime cstime" in clock ticks (empty if gone).
ticks() {
	local line rest
	read -r line 2>/dev/null <"/proc/$1/stat" || return 0
	rest=${line##*) }
	# shellcheck disable=SC2086
	set -- $rest # state is $1; utime is field 14 of stat, i.e. $12 here
	echo "${12} ${13} ${14} ${15}"
}

# snapshot PIDS...: one "pid utime stime cutime cstime" line each.
snapshot() {
	local p s
	for p in "$@"; do
		s=$(ticks "$p")
		[[ -n $s ]] && echo "$p $s"
	done
	return 0
}

# delta BEFORE AFTER: "own_ticks children_ticks processes" summed over PIDs present in both.
delta() {
	awk 'NF == 0 { next }
		NR == FNR { u[$1] = $2; s[$1] = $3; cu[$1] = $4; cs[$1] = $5; next }
		($1 in u) { own += ($2 - u[$1]) + ($3 - s[$1]); ch += ($4 - cu[$1]) + ($5 - cs[$1]); n++ }
		END { printf "%d %d %d\n", own, ch, n }' <(echo "$1") <(echo "$2")
}

if ((SETTLE > 0)); then
	log "settling ${SETTLE}s"
	nap "$SETTLE"
fi

# ---- the window ----
log "sampling CPU for ${WINDOW}s"
b_up=$(snapshot "$UP_PID")
b_shim=$(snapshot "${SHIM_PIDS[@]}")
b_logd=$(snapshot "${LOGD_PIDS[@]}")
b_ctrd=$(snapshot "$CTRD_PID")
w0=$(date +%s%N)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
nap "$WINDOW"
a_up=$(snapshot "$UP_PID")
a_shim=$(snapshot "${SHIM_PIDS[@]}")
a_logd=$(snapshot "${LOGD_PIDS[@]}")
a_ctrd=$(snapshot "$CTRD_PID")
w1=$(date +%s%N)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
alive "$UP_PID" || die "podrun up --foreground exited during the window"
rss=$(awk '/^VmRSS:/ { print $2 " " $3 }' "/proc/$UP_PID/status")
hwm=$(awk '/^VmHWM:/ { print $2 " " $3 }' "/proc/$UP_PID/status")
threads=$(awk '/^Threads:/ { print $2 }' "/proc/$UP_PID/status")

read -r up_own up_ch _ <<<"$(delta "$b_up" "$a_up")"
read -r shim_own shim_ch shim_n <<<"$(delta "$b_shim" "$a_shim")"
read -r logd_own _ logd_n <<<"$(delta "$b_logd" "$a_logd")"
read -r ctrd_own _ _ <<<"$(delta "$b_ctrd" "$a_ctrd")"

# State after the window: restarts and readiness (informational).
ps_json=$("$TMP/podrun" "${G[@]}" ps -o json)
restarts=$(jq '[.items[].status.containerStatuses[]?.restartCount] | add // 0' <<<"$ps_json")
ready_end=$(jq '[.items[] | select(all(.status.containerStatuses[]?; .ready))] | length' <<<"$ps_json")

# secs TICKS, pct TICKS: CPU seconds, and % of one core over the window.
wall=$(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
secs() { awk -v t="$1" -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }'; }
pct() { awk -v t="$1" -v hz="$HZ" -v w="$wall" 'BEGIN { printf "%.2f", 100 * t / hz / w }'; }
total=$((up_own + shim_own + shim_ch + logd_own + ctrd_own))
per_pod=$(awk -v t="$up_own" -v hz="$HZ" -v w="$wall" -v n="$PODS" 'BEGIN { printf "%.3f", 100 * t / hz / w / n }')
if ((ALL_READY)); then
	readiness_note="all pods were Ready"
else
	readiness_note="the Ready wait gave up with only $ready_start/$PODS Ready: NOT ALL READY, the figures are for a degraded run"
fi

cat <<EOF

podrun up --foreground supervising $PODS pods (1 busybox httpd container each; exec readinessProbe + httpGet livenessProbe, periodSeconds 1)
  host: $(nproc) CPUs, $(uname -r), $(containerd --version | awk '{print "containerd " $3}'), CLK_TCK $HZ; load average $load0 at the window's start, $load1 at its end
  window: ${wall}s of wall time, starting ${SETTLE}s after ${readiness_note} (~${ready_after}s after start); $ready_end/$PODS Ready and $restarts restarts at the end; $served/$PODS served HTTP before it
  supervising process (podrun up --foreground, pid $UP_PID):
    CPU (utime+stime):              $(secs "$up_own") s  = $(pct "$up_own") % of one core ($per_pod % per pod)
    resident memory (VmRSS):        $rss (peak VmHWM $hwm), $threads threads
    reaped children (cutime+cstime): $(secs "$up_ch") s
  for context, not podrun's own process (same window):
    containerd-shim-runc-v2, $shim_n shims (parents of namespace $NS's task PIDs on the private containerd):
      own CPU:                      $(secs "$shim_own") s  = $(pct "$shim_own") % of one core
      reaped children (runc exec, exec-probe processes): $(secs "$shim_ch") s  = $(pct "$shim_ch") % of one core
    podrun cri-log drivers, $logd_n processes (children of those shims): $(secs "$logd_own") s  = $(pct "$logd_own") % of one core
    private containerd daemon (pid $CTRD_PID): $(secs "$ctrd_own") s  = $(pct "$ctrd_own") % of one core
    all of the above together:      $(secs "$total") s  = $(pct "$total") % of one core
EOF

# ---- graceful stop ----
log "stopping podrun up --foreground (pid $UP_PID) with SIGTERM"
stop0=$(date +%s%N)
kill -TERM "$UP_PID"
wait_gone "$UP_PID" 120 || die "podrun up --foreground did not exit within 120s of SIGTERM"
up_rc=0
wait "$UP_PID" || up_rc=$?
UP_PID=""
stop1=$(date +%s%N)
tasks_left=$(ctr -a "$SOCK" -n "$NS" task ls -q 2>/dev/null | wc -l)
ctrs_left=$(ctr -a "$SOCK" -n "$NS" containers ls -q 2>/dev/null | wc -l)
cat <<EOF
  stop: SIGTERM -> podrun up --foreground exited (code $up_rc) after $(awk -v a="$stop0" -v b="$stop1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s; $tasks_left tasks and $ctrs_left containers left in namespace $NS
  total run time: $(awk -v a="$START_NS" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s (before cleanup)
EOF
((up_rc == 0)) || die "podrun up --foreground exited with code $up_rc (its stderr follows)"
