#!/usr/bin/env bash
# daemon.sh: how fast `podrun daemon` reacts to its manifest directory, how
# fast it starts many pods, and how much memory it holds (issue 4's
# benchmarks). It prints figures only: it asserts no threshold.
#
#   (a) reaction time: a one-container pod's manifest is written to a
#       dotfile in the watched directory (ignored by the daemon), then `mv`d
#       to NAME.yaml; the clock runs from just before the `mv`. After one
#       warm-up run (printed apart), RUNS runs (default 15) stop the clock
#       when `podrun ps -o json`, polled every POLL seconds (default 0.01) on
#       top of the time a `podrun ps` call takes, shows the pod Running; then
#       RUNS more runs poll nothing that loads the host (a `ps` is a process
#       competing for the 2 cores with the pod being started) and stop the
#       clock at the daemon's own "pod created ... phase=Running" line.
#       Nothing is subtracted. The daemon's stderr is time-stamped as it is
#       read, so the figures are also split by the daemon's own lines:
#       rename -> first pipeline step starts (inotify, debounce, re-scan,
#       listing), each pipeline step, last step -> "pod created".
#       Between runs the file is removed and the pod waited out (that time is
#       printed too).
#   (b) PODS (default 50) one-container pods, ONE FILE PER POD: 50 files are
#       written to a staging dir on the same filesystem and moved into the
#       watched directory by a single `mv` (50 renames within milliseconds);
#       time until `podrun ps -o json` shows all of them Running.
#   (c) the daemon's resident memory (VmRSS and VmHWM from /proc/PID/status,
#       split into RssAnon and RssFile, and Pss from smaps_rollup) right
#       after (b) and after STEADY seconds (default 60) of steady state with
#       the PODS pods, with its CPU time over that minute.
#   Then (informational) the PODS files are removed and the time until the
#   pods are gone is printed, and the daemon gets SIGTERM.
#
# Runs on a PRIVATE containerd (own config, root, state and socket under a
# temp dir; see lib.sh) with its own podrun root, log dir, namespace and an
# empty CNI config dir (podrun's own bridge network). The daemon runs with
# --stop-pods-on-exit and serves /readyz and /metrics on a unix socket in
# the temp dir only.
#
# Needs root, containerd, runc, the CNI plugins and a static busybox (as
# `make test`). Run it through the e2e lock: `make bench-daemon`, i.e.
#   flock /tmp/podrun-e2e.lock bash bench/daemon.sh
#
# Everything it starts is stopped by PID and everything it made is removed on
# any exit (trap): the daemon gets SIGTERM (it stops its pods), whatever pod
# is left is removed with `podrun down`, then the private containerd is
# stopped, whatever is still mounted under the temp dir is unmounted and the
# temp dir removed. It never kills by name and sends traffic only to the
# daemon's unix socket.
set -euo pipefail

RUNS=${RUNS:-15}             # measured rename runs for (a)
PODS=${PODS:-50}             # pods for (b) and (c)
STEADY=${STEADY:-60}         # seconds of steady state for (c)
POLL=${POLL:-0.01}           # seconds between `podrun ps` polls in (a)
READY_TIMEOUT=${READY_TIMEOUT:-300}
NS=podrun-bench-daemon       # containerd namespace
NODE=$(hostname | tr '[:upper:]' '[:lower:]') # the node's name: static pods are <name>-<node>
IMAGE=podrun.bench/busybox:1

START_NS=$(date +%s%N)
HZ=$(getconf CLK_TCK)

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_require_root bench-daemon
bench_require_tools containerd ctr runc jq curl setpriv setsid go getconf mkfifo

# ---- state the trap cleans up (besides lib.sh's) ----
D_PID=""      # podrun daemon
STAMP_PID=""  # the loop time-stamping the daemon's stderr
WRITTEN=""    # a copy of every manifest the script wrote (for the safety net)

cleanup() {
	local rc=$? left
	set +e
	trap - EXIT INT TERM
	stop_pid "$D_PID" "podrun daemon (--stop-pods-on-exit)" 180
	# The stamper ends at the daemon's EOF; stop it if it has not.
	if [[ -n $STAMP_PID ]] && alive "$STAMP_PID" && ! wait_gone "$STAMP_PID" 5; then
		kill -TERM "$STAMP_PID"
	fi
	[[ -n $STAMP_PID ]] && wait "$STAMP_PID" 2>/dev/null
	if ((rc != 0)) && [[ -n $TMP ]]; then
		[[ -s $TMP/daemon.err ]] && { log "podrun daemon stderr (last 40 lines):"; tail -n 40 "$TMP/daemon.err" >&2; }
		bench_dump_containerd_log
	fi
	if [[ -n $CTRD_PID ]] && alive "$CTRD_PID"; then
		# Safety net: remove any pod of ours that is still there (netns, veth, IPAM
		# reservations live outside the temp dir). Idempotent.
		left=$(bench_containers_left)
		if ((left > 0)) && [[ -n $WRITTEN ]] && compgen -G "$WRITTEN/*.yaml" >/dev/null; then
			log "cleanup: $left containers left: podrun down --grace-period 0"
			timeout 180 "$TMP/podrun" "${G[@]}" down --grace-period 0 "$WRITTEN" >&2
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
MDIR=$TMP/manifests
WRITTEN=$TMP/written
mkdir -p "$MDIR" "$WRITTEN" "$TMP/stage"

bench_build
bench_start_containerd
bench_import_image "$IMAGE"

# ---- helpers ----

# now_us VAR: the wall clock in microseconds, without a fork.
now_us() {
	local t=$EPOCHREALTIME
	printf -v "$1" '%d' $((${t%[.,]*} * 1000000 + 10#${t#*[.,]}))
}

# ms MICROSECONDS: as milliseconds with one decimal.
ms() { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }

# stats: "median min max" (ms, one decimal) of the numbers (µs) on stdin.
stats() {
	sort -n | awk '{ v[NR] = $1 }
		END {
			if (NR == 0) { print "- - -"; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.1f %.1f %.1f\n", m / 1000, v[1] / 1000, v[NR] / 1000
		}'
}

# stamp: each line of stdin, prefixed with the time it was read (µs).
stamp() {
	local line t
	while IFS= read -r line || [[ -n $line ]]; do
		t=$EPOCHREALTIME
		printf '%d %s\n' $((${t%[.,]*} * 1000000 + 10#${t#*[.,]})) "$line"
	done
}

podrun() { "$TMP/podrun" "${G[@]}" "$@"; }

# listed REGEX: whether \`podrun ps -a -o name\` lists a pod matching REGEX
# (true too when ps fails: not known to be gone).
listed() {
	local names
	names=$(podrun ps -a -o name 2>>"$TMP/ps.err") || return 0
	grep -q "$1" <<<"$names"
}

# pod_yaml NAME: a one-container pod that exits at once on SIGTERM.
pod_yaml() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
  labels: {app: daemon-bench}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: $IMAGE
    imagePullPolicy: IfNotPresent
    # sleep as PID 1 would ignore SIGTERM; the shell exits on it.
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
EOF
}

metrics() { curl -s -m 5 --unix-socket "$TMP/metrics.sock" http://localhost/metrics 2>/dev/null || true; }
# metric NAME: a sample's value from the daemon's /metrics ("-" if absent).
metric() { metrics | awk -v n="$1" '$1 == n { v = $2 } END { print (v == "" ? "-" : v) }'; }
mib() { awk -v b="$1" 'BEGIN { if (b == "-") print "-"; else printf "%.1f MiB", b / 1048576 }'; }

# proc_kb PID FIELD: a /proc/PID/status field in kB (as a number).
proc_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
kb_mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
# mem_split PID: VmRSS split into its private part (RssAnon: heap, stacks,
# runtime) and the binary's file pages (RssFile, shared with every process
# of the same binary: the containers' log drivers, pauses, commands), and
# the proportional set size (Pss: file pages divided among their sharers).
mem_split() {
	local pss
	pss=$(awk '$1 == "Pss:" { print $2 }' "/proc/$1/smaps_rollup")
	printf 'RssAnon %s + RssFile %s; Pss %s' "$(kb_mib "$(proc_kb "$1" RssAnon)")" "$(kb_mib "$(proc_kb "$1" RssFile)")" "$(kb_mib "$pss")"
}

# cpu_ticks PID: utime+stime.
cpu_ticks() {
	local line rest
	read -r line <"/proc/$1/stat"
	rest=${line##*) }
	# shellcheck disable=SC2086
	set -- $rest
	echo $((${12} + ${13}))
}

# created_stamp NAME: the stamp of the daemon's "pod created" line for
# default/NAME (empty until it is there).
created_stamp() {
	awk -v p="pod=default/$1 " 'index($0, "msg=\"pod created\" " p) { s = $1 } END { print s }' "$TMP/daemon.err"
}

# STEPS_AWK: parses the stamped daemon stderr. For every pod whose name
# matches the regex pat and line stamped at or after t0, prints
#   S <tab> pod <tab> step <tab> elapsed-µs        per pipeline step line
#   P <tab> pod <tab> start-µs <tab> end-µs <tab> created-µs
# where start is the first step's stamp minus its elapsed time, end the last
# step's stamp and created the "pod created" line's stamp.
STEPS_AWK='
function dur(s,  m) {
	if (sub(/ms$/, "", s)) return s * 1000
	if (s ~ /m/) { m = s; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", s); sub(/s$/, "", s); return (m * 60 + s) * 1e6 }
	if (sub(/s$/, "", s)) return s * 1e6
	return 0
}
$1 >= t0 {
	line = substr($0, index($0, " ") + 1)
	if (match(line, /^default\/[^ ]+ \[[0-9]+\/[0-9]+\] /)) {
		pod = substr(line, 9, index(line, " ") - 9)
		if (pod !~ pat) next
		rest = substr(line, RLENGTH + 1)
		if (!match(rest, / \([^)]*\)$/)) next
		step = substr(rest, 1, RSTART - 1)
		el = dur(substr(rest, RSTART + 2, RLENGTH - 3))
		idx = substr(line, index(line, "[") + 1) + 0
		if (idx == 1) start[pod] = $1 - el
		end[pod] = $1
		seen[pod] = 1
		printf "S\t%s\t%s\t%.0f\n", pod, step, el
		next
	}
	if (index(line, "msg=\"pod created\" pod=default/")) {
		pod = line; sub(/.*msg="pod created" pod=default\//, "", pod); sub(/ .*/, "", pod)
		if (pod !~ pat) next
		created[pod] = $1
		seen[pod] = 1
	}
}
END { for (p in seen) printf "P\t%s\t%.0f\t%.0f\t%.0f\n", p, start[p], end[p], created[p] }
'

# ---- the daemon ----
mkfifo "$TMP/daemon.fifo"
stamp <"$TMP/daemon.fifo" >"$TMP/daemon.err" &
STAMP_PID=$!
# Own session; SIGTERM (which stops its pods) if the script dies.
setpriv --pdeathsig TERM setsid "$TMP/podrun" "${G[@]}" daemon --manifest-dir "$MDIR" --stop-pods-on-exit \
	--listen "unix:$TMP/metrics.sock" >"$TMP/daemon.out" 2>"$TMP/daemon.fifo" </dev/null &
D_PID=$!
deadline=$((SECONDS + 60))
until [[ $(curl -s -m 2 --unix-socket "$TMP/metrics.sock" http://localhost/readyz 2>/dev/null) == ok ]]; do
	alive "$D_PID" || die "podrun daemon exited during startup"
	((SECONDS < deadline)) || die "podrun daemon not ready within 60s"
	sleep 0.05
done
[[ $(readlink "/proc/$D_PID/exe") == "$TMP/podrun" ]] || die "pid $D_PID is not our podrun"
log "podrun daemon (pid $D_PID) ready, watching $MDIR"
rss_idle=$(proc_kb "$D_PID" VmRSS)
split_idle=$(mem_split "$D_PID")

# ---- (a) reaction time ----
: >"$TMP/a.runs"  # mode run total_us created_us detect_us pipeline_us tolog_us seen_us polls removal_us
: >"$TMP/a.steps" # mode run step elapsed_us
: >"$TMP/a.polls" # duration of each `podrun ps -o json | jq` poll during the ps runs, µs

# For scale: a `podrun ps -o json | jq` poll with nothing else going on.
: >"$TMP/a.idle"
for _ in 1 2 3 4 5 6 7; do
	now_us p0
	podrun ps -o json 2>>"$TMP/ps.err" | jq -r '.items | length' >/dev/null
	now_us p1
	echo $((p1 - p0)) >>"$TMP/a.idle"
	nap 0.2
done

# react MODE RUN: one rename run; appends to the files above. MODE ps (or
# warm, the warm-up): the clock stops when `podrun ps -o json` shows the pod
# Running. MODE log: nothing polls the runtime; the clock stops at the stamp
# of the daemon's "pod created" line (phase=Running), watched in its
# stderr file every POLL seconds, and one `ps` then checks that it is Running.
react() {
	local mode=$1 run=$2 name pod t0 t1 p0 p1 phase polls=0 r0 r1 rows created c_start c_end c_created
	printf -v name 'react-%02d' "$run"
	pod=$name-$NODE # the daemon's pods are static pods, named as the kubelet names them
	pod_yaml "$name" >"$WRITTEN/$name.yaml"
	cp "$WRITTEN/$name.yaml" "$MDIR/.$name.yaml.tmp"
	nap 0.3 # the dotfile's events come and go unseen
	now_us t0
	mv "$MDIR/.$name.yaml.tmp" "$MDIR/$name.yaml"
	while :; do
		polls=$((polls + 1))
		now_us p0
		if [[ $mode == log ]]; then
			created=$(created_stamp "$pod")
			if [[ -n $created ]]; then
				t1=$created
				break
			fi
		else
			phase=$(podrun ps -o json 2>>"$TMP/ps.err" | jq -r --arg n "$pod" \
				'[.items[] | select(.metadata.name == $n) | .status.phase] | first // ""' 2>/dev/null) || phase=""
			now_us p1
			[[ $mode == ps ]] && echo $((p1 - p0)) >>"$TMP/a.polls"
			if [[ $phase == Running ]]; then
				t1=$p1
				break
			fi
			[[ $phase == Failed ]] && die "pod $name Failed"
		fi
		((p0 - t0 < 60000000)) || die "pod $name not Running 60s after the rename"
		alive "$D_PID" || die "podrun daemon exited"
		sleep "$POLL"
	done
	# The daemon logs "pod created" once the pod's Up returned.
	for _ in $(seq 100); do
		created=$(created_stamp "$pod")
		[[ -n $created ]] && break
		nap 0.05
	done
	if [[ $mode == log ]]; then
		phase=$(podrun ps -o json 2>>"$TMP/ps.err" | jq -r --arg n "$pod" \
			'[.items[] | select(.metadata.name == $n) | .status.phase] | first // ""')
		[[ $phase == Running ]] || die "pod $name: the daemon logged it created, but ps shows it ${phase:-absent}"
	fi
	rows=$(awk -v t0="$t0" -v pat="^$pod\$" "$STEPS_AWK" "$TMP/daemon.err")
	awk -F'\t' -v m="$mode" -v r="$run" '$1 == "S" { print m "\t" r "\t" $3 "\t" $4 }' <<<"$rows" >>"$TMP/a.steps"
	read -r _ _ c_start c_end c_created <<<"$(grep -m1 '^P' <<<"$rows")" || true
	[[ -n ${c_start:-} && -n ${c_created:-} && $c_created != 0 ]] || die "no pipeline lines of $name in the daemon's stderr"
	# Remove the file; wait until the pod is gone (not even in ps -a).
	now_us r0
	rm "$MDIR/$name.yaml"
	while listed "^pod/$pod\$"; do
		now_us r1
		((r1 - r0 < 60000000)) || die "pod $name still there 60s after its file was removed"
		sleep 0.02
	done
	now_us r1
	printf '%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n' "$mode" "$run" $((t1 - t0)) $((c_created - t0)) $((c_start - t0)) \
		$((c_end - c_start)) $((c_created - c_end)) $((t1 - c_created)) "$polls" $((r1 - r0)) >>"$TMP/a.runs"
	log "(a) $mode run $run: $(ms $((t1 - t0))) ms"
	nap 0.5
}

load_a0=$(cut -d' ' -f1-3 /proc/loadavg)
log "(a) 1 warm-up run, $RUNS runs polled with podrun ps, $RUNS runs watched in the daemon's log only"
react warm 0
for run in $(seq 1 "$RUNS"); do react ps "$run"; done
for run in $(seq $((RUNS + 1)) $((2 * RUNS))); do react log "$run"; done
load_a1=$(cut -d' ' -f1-3 /proc/loadavg)

# col MODE N: column N of the runs of MODE.
col() { awk -F'\t' -v m="$1" -v n="$2" '$1 == m { print $n }' "$TMP/a.runs"; }
# fig MODE N: "median X ms, min Y, max Z" of column N of the runs of MODE.
fig() { col "$1" "$2" | stats | awk '{ printf "median %s ms, min %s, max %s", $1, $2, $3 }'; }
# steps MODE: median and max of each step over the runs of MODE, in pipeline order.
steps() {
	awk -F'\t' -v m="$1" '$1 == m' "$TMP/a.steps" | awk -F'\t' '!($3 in o) { o[$3] = ++n } { print o[$3] "\t" $3 "\t" $4 }' |
		sort -t$'\t' -k1,1n -k3,3n | awk -F'\t' '
		{ v[$1, ++c[$1]] = $3; name[$1] = $2; if ($1 > n) n = $1 }
		END { for (i = 1; i <= n; i++) { k = c[i]; m = (k % 2) ? v[i, (k + 1) / 2] : (v[i, k / 2] + v[i, k / 2 + 1]) / 2
			printf "          %-26s median %6.1f ms  max %6.1f\n", name[i], m / 1000, v[i, k] / 1000 } }'
}
allruns() { col "$1" 3 | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 / 1000 }'; }
medpolls() { col "$1" 9 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
hwm_after_a=$(proc_kb "$D_PID" VmHWM)
rss_after_a=$(proc_kb "$D_PID" VmRSS)

# ---- (b) PODS pods from one directory, one file each ----
for i in $(seq 1 "$PODS"); do
	printf -v name 'bulk-%02d' "$i"
	pod_yaml "$name" >"$WRITTEN/$name.yaml"
	cp "$WRITTEN/$name.yaml" "$TMP/stage/$name.yaml"
done
nap 1
log "(b) moving $PODS manifests (one pod each) into $MDIR with one mv"
load_b0=$(cut -d' ' -f1-3 /proc/loadavg)
ticks_b0=$(cpu_ticks "$D_PID")
now_us b0
mv "$TMP"/stage/*.yaml "$MDIR"/
now_us b_mv
b_first=""
b_polls=0
: >"$TMP/b.polls" # duration of each `podrun ps -o json` call during (b), µs
while :; do
	now_us bp
	json=$(podrun ps -o json 2>>"$TMP/ps.err") || json='{"items":[]}'
	now_us bt
	echo $((bt - bp)) >>"$TMP/b.polls"
	b_polls=$((b_polls + 1))
	read -r running failed <<<"$(jq -r '[.items[] | select(.metadata.name | startswith("bulk-"))] |
		"\([.[] | select(.status.phase == "Running")] | length) \([.[] | select(.status.phase == "Failed")] | length)"' <<<"$json" 2>/dev/null || echo "0 0")"
	[[ -z $b_first && $running -gt 0 ]] && b_first=$((bt - b0))
	((running == PODS)) && break
	((failed == 0)) || die "$failed of the $PODS pods Failed"
	((bt - b0 < READY_TIMEOUT * 1000000)) || die "only $running of $PODS pods Running after ${READY_TIMEOUT}s"
	alive "$D_PID" || die "podrun daemon exited"
	sleep 0.1
done
b_all=$((bt - b0))
log "(b) all $PODS pods Running after $(ms "$b_all") ms"
# Wait for the daemon's Up of every pod to return ("pod created" logged).
for _ in $(seq 600); do
	n=$(grep -c 'msg="pod created" pod=default/bulk-' "$TMP/daemon.err" || true)
	((n >= PODS)) && break
	nap 0.1
done
ticks_b1=$(cpu_ticks "$D_PID")
load_b1=$(cut -d' ' -f1-3 /proc/loadavg)
rows=$(awk -v t0="$b0" -v pat='^bulk-' "$STEPS_AWK" "$TMP/daemon.err")
b_steps=$(awk -F'\t' '$1 == "S" { print $3 "\t" $4 }' <<<"$rows" | awk -F'\t' '!($1 in o) { o[$1] = ++n } { print o[$1] "\t" $1 "\t" $2 }' |
	sort -t$'\t' -k1,1n -k3,3n | awk -F'\t' '
		{ v[$1, ++c[$1]] = $3; name[$1] = $2; if ($1 > n) n = $1 }
		END { for (i = 1; i <= n; i++) { k = c[i]; m = (k % 2) ? v[i, (k + 1) / 2] : (v[i, k / 2] + v[i, k / 2 + 1]) / 2
			printf "        %-26s median %7.1f ms  max %7.1f ms  (%d pods)\n", name[i], m / 1000, v[i, k] / 1000, k } }')
# Per pod: pipeline start, end and "pod created", relative to the mv.
b_pods=$(awk -F'\t' -v b0="$b0" '$1 == "P" { printf "%.0f\t%.0f\t%.0f\n", $3 - b0, $4 - b0, $5 - b0 }' <<<"$rows")
b_npods=$(grep -c . <<<"$b_pods" || true)
read -r b_smed b_smin b_smax <<<"$(cut -f1 <<<"$b_pods" | stats)"
read -r b_emed b_emin b_emax <<<"$(cut -f2 <<<"$b_pods" | stats)"
read -r b_cmed b_cmin b_cmax <<<"$(cut -f3 <<<"$b_pods" | stats)"
# Batches: "pod created" lines are logged when a sync's Up returns, so the
# syncs that started pods show as clusters of them (a gap of > 0.5 s apart).
b_batches=$(cut -f3 <<<"$b_pods" | sort -n | awk '
	NR == 1 || $1 - prev > 500000 { if (NR > 1) printf "%d pods at %.2f s; ", n, prev / 1e6; n = 0 }
	{ n++; prev = $1 } END { printf "%d pods at %.2f s", n, prev / 1e6 }')
b_cpu=$(awk -v t=$((ticks_b1 - ticks_b0)) -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }')

# ---- (c) resident memory with PODS pods ----
c_rss0=$(proc_kb "$D_PID" VmRSS)
c_split0=$(mem_split "$D_PID")
c_hwm0=$(proc_kb "$D_PID" VmHWM)
c_thr0=$(proc_kb "$D_PID" Threads)
c_heap0=$(metric go_memstats_heap_inuse_bytes)
c_sys0=$(metric go_memstats_sys_bytes)
c_gor0=$(metric go_goroutines)
log "(c) steady state for ${STEADY}s with $PODS pods"
ticks_c0=$(cpu_ticks "$D_PID")
load_c0=$(cut -d' ' -f1-3 /proc/loadavg)
now_us c0
nap "$STEADY"
now_us c1
ticks_c1=$(cpu_ticks "$D_PID")
load_c1=$(cut -d' ' -f1-3 /proc/loadavg)
alive "$D_PID" || die "podrun daemon exited during the steady state"
c_rss1=$(proc_kb "$D_PID" VmRSS)
c_split1=$(mem_split "$D_PID")
c_hwm1=$(proc_kb "$D_PID" VmHWM)
c_thr1=$(proc_kb "$D_PID" Threads)
c_heap1=$(metric go_memstats_heap_inuse_bytes)
c_sys1=$(metric go_memstats_sys_bytes)
c_gor1=$(metric go_goroutines)
c_cpu=$(awk -v t=$((ticks_c1 - ticks_c0)) -v hz="$HZ" -v w=$((c1 - c0)) 'BEGIN { printf "%.2f s = %.2f %% of one core", t / hz, 100 * t / hz / (w / 1e6) }')
ps_json=$(podrun ps -o json 2>>"$TMP/ps.err")
c_running=$(jq '[.items[] | select((.metadata.name | startswith("bulk-")) and .status.phase == "Running")] | length' <<<"$ps_json")
c_restarts=$(jq '[.items[].status.containerStatuses[]?.restartCount] | add // 0' <<<"$ps_json")
# For context: the private containerd and the shims serving the pods.
ctrd_rss=$(proc_kb "$CTRD_PID" VmRSS)
shim_n=0
shim_kb=0
for pid in $(shims_of_address); do
	k=$(proc_kb "$pid" VmRSS 2>/dev/null) || continue
	shim_n=$((shim_n + 1))
	shim_kb=$((shim_kb + k))
done

# ---- teardown: remove the PODS files (informational) ----
log "removing the $PODS manifests"
now_us d0
rm "$MDIR"/bulk-*.yaml
while listed '^pod/bulk-'; do
	now_us dt
	((dt - d0 < READY_TIMEOUT * 1000000)) || die "pods still there ${READY_TIMEOUT}s after their files were removed"
	alive "$D_PID" || die "podrun daemon exited"
	sleep 0.1
done
now_us d1
d_hwm=$(proc_kb "$D_PID" VmHWM)
d_rss=$(proc_kb "$D_PID" VmRSS)
d_thr=$(proc_kb "$D_PID" Threads)
d_heap=$(metric go_memstats_heap_inuse_bytes)
d_sys=$(metric go_memstats_sys_bytes)

# ---- SIGTERM ----
log "stopping podrun daemon (pid $D_PID) with SIGTERM"
now_us s0
kill -TERM "$D_PID"
wait_gone "$D_PID" 120 || die "podrun daemon did not exit within 120s of SIGTERM"
d_rc=0
wait "$D_PID" || d_rc=$?
D_PID=""
now_us s1
ctrs_left=$(bench_containers_left)

sum3() { echo "median $1 ms, min $2, max $3"; }
cat <<EOF

podrun daemon benchmarks (issue 4), private containerd; pods: 1 busybox container each, image present
  host: $(nproc) CPUs, $(uname -r), $(containerd --version | awk '{print "containerd " $3}'), $(awk '/^MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo)
  daemon: --resync 10s (default), --settle 500ms (default), --stop-pods-on-exit, --listen unix:<tmp>/metrics.sock

(a) reaction time: mv .NAME.yaml.tmp -> NAME.yaml in the watched dir, until the pod is Running (load average $load_a0 before, $load_a1 after)
    warm-up run (first pod of the daemon; ps-polled): $(ms "$(col warm 3)") ms, "pod created" logged at $(ms "$(col warm 4)") ms
    $RUNS runs polled with \`podrun ps -o json\` every ${POLL}s, clock stopped when a poll returns Running:
      rename -> Running seen by ps:       $(fig ps 3)   [goal: median < 300 ms]
        all runs (ms):                    $(allruns ps)
      rename -> daemon logs "pod created": $(fig ps 4)
      "pod created" -> ps saw Running:    $(fig ps 8)   (< 0: ps saw Running before the daemon logged it)
      measuring instrument: a \`podrun ps -o json | jq\` poll took $(stats <"$TMP/a.polls" | awk '{ printf "median %s ms, min %s, max %s", $1, $2, $3 }') during these runs
        ($(medpolls ps) polls per run, median) and $(stats <"$TMP/a.idle" | awk '{ printf "median %s ms, min %s, max %s", $1, $2, $3 }') with nothing else going on
    $RUNS runs NOT polled (no ps while the pod starts), clock stopped at the daemon's stamped "pod created ... phase=Running" line:
      rename -> "pod created" (Running):  $(fig log 3)   [goal: median < 300 ms]
        all runs (ms):                    $(allruns log)
    where it goes, from the daemon's stderr time-stamped as read (medians of each part; polled | not polled):
      rename -> first step starts:        $(fig ps 5) | $(fig log 5)
                                          (inotify, the 5 ms debounce, re-scan of the dir, two pod listings)
      first step start -> last step done: $(fig ps 6) | $(fig log 6)
        steps, polled runs:
$(steps ps)
        steps, not polled:
$(steps log)
      last step done -> "pod created":    $(fig ps 7) | $(fig log 7)
    file removed -> pod gone (ps -a):     $(fig ps 10) | $(fig log 10)

(b) $PODS pods, one manifest file per pod, moved into the watched dir by one \`mv\` (took $(ms $((b_mv - b0))) ms; load average $load_b0 before, $load_b1 after)
    first pod Running seen by ps:       $(ms "$b_first") ms
    all $PODS pods Running seen by ps:  $(awk -v u="$b_all" 'BEGIN { printf "%.2f", u / 1e6 }') s   [goal: < 20 s on 2 cores]
    measuring instrument: $b_polls ps polls, 0.1 s apart; a \`podrun ps -o json\` call took $(stats <"$TMP/b.polls" | awk '{ printf "median %s ms, min %s, max %s", $1, $2, $3 }')
    from the daemon's stderr ($b_npods pods; times after the mv):
      pipeline start:                   median $b_smed ms, first $b_smin, last $b_smax
      pipeline done (last step):        median $b_emed ms, first $b_emin, last $b_emax
      "pod created" logged:             median $b_cmed ms, first $b_cmin, last $b_cmax
      syncs that started them:          $b_batches
      steps (median and max over the pods):
$b_steps
    daemon CPU from the mv to the last "pod created": $b_cpu s

(c) daemon resident memory (pid of podrun daemon; /proc/PID/status)
    idle, no pods (after the first sync): VmRSS $(kb_mib "$rss_idle") = $split_idle
    after (a) ($((2 * RUNS + 1)) pods started and stopped): VmRSS $(kb_mib "$rss_after_a"), VmHWM $(kb_mib "$hwm_after_a")
    right after (b), $PODS pods Running:      VmRSS $(kb_mib "$c_rss0"), VmHWM $(kb_mib "$c_hwm0"), $c_thr0 threads; Go heap in use $(mib "$c_heap0"), Go sys $(mib "$c_sys0"), $c_gor0 goroutines   [goal: VmRSS <= 32 MiB]
        = $c_split0
    after ${STEADY}s of steady state:       VmRSS $(kb_mib "$c_rss1"), VmHWM $(kb_mib "$c_hwm1"), $c_thr1 threads; Go heap in use $(mib "$c_heap1"), Go sys $(mib "$c_sys1"), $c_gor1 goroutines
        = $c_split1
    daemon CPU over those ${STEADY}s: $c_cpu (load average $load_c0 before, $load_c1 after); $c_running/$PODS Running and $c_restarts restarts at the end
    for context, not the daemon: private containerd VmRSS $(kb_mib "$ctrd_rss"); $shim_n shims VmRSS $(kb_mib "$shim_kb") together

teardown (informational)
    $PODS files removed with one rm -> all pods gone (ps -a): $(awk -v u=$((d1 - d0)) 'BEGIN { printf "%.2f", u / 1e6 }') s; daemon then VmRSS $(kb_mib "$d_rss"), VmHWM $(kb_mib "$d_hwm"), $d_thr threads, Go heap in use $(mib "$d_heap"), Go sys $(mib "$d_sys")
    SIGTERM -> daemon exited (code $d_rc) after $(ms $((s1 - s0))) ms; $ctrs_left containers left in namespace $NS
  total run time: $(awk -v a="$START_NS" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s (before cleanup)
EOF
((d_rc == 0)) || die "podrun daemon exited with code $d_rc"
