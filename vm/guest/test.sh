#!/usr/bin/env bash
# The checks of `make test-vm`, run inside the Debian 12 guest (systemd,
# cgroup v2 unified, Debian's containerd as a service) by podrun-vm.service
# from the host's 9p share (vm/run.sh puts podrun, mkimage, this script, the
# shipped unit and the leak check there).
#
# Each check runs in its own subshell with set -e, its output in
# out/logs/NAME.log; out/checks gets one "PASS NAME" or "FAIL NAME" line per
# check, out/plan the checks that must all report, and out/done is written
# last. vm/run.sh passes only when every planned check passed and done is
# there: a guest that dies or hangs half-way fails.
set -uo pipefail
export LC_ALL=C PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

SHARE=/mnt/share
OUT=$SHARE/out
STATE=/run/podrun-vm # what one check hands to a later one
IMAGE=podrun.local/busybox:1
NODE=$(hostname | tr '[:upper:]' '[:lower:]')
UNIT=podrun-daemon
MANIFESTS=/etc/podrun/manifests
DROPIN=/etc/systemd/system/$UNIT.service.d
CG=/sys/fs/cgroup

PLAN=(
	guest image-import
	limits-container-cgroups limits-pod-cgroup limits-after-daemon-reload limits-down
	oomkilled
	daemon-enable-notify hostport daemon-restart-adopts daemon-stop-keeps-pods
	probe-restart-backoff watchdog stop-pods-on-exit
	leakcheck
)

mkdir -p "$OUT/logs" "$STATE"
: >"$OUT/checks"
printf '%s\n' "${PLAN[@]}" >"$OUT/plan"

# ---- helpers (used inside checks, under set -e) ----

log() { echo "# $*"; }

# eq WHAT GOT WANT fails the check unless GOT is WANT.
eq() {
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1 = '$2', want '$3'"
		return 1
	fi
	echo "ok: $1 = '$2'"
}

# podrun with a bound, echoing the command.
pr() {
	echo "\$ podrun $*" >&2
	timeout 300 podrun "$@"
}

status_json() { timeout 60 podrun status "$1" -o json; }

# cid POD CONTAINER: the container's id (without containerd://).
cid() {
	status_json "$1" | jq -er --arg c "$2" '.status.containerStatuses[] | select(.name == $c) | .containerID | sub("^containerd://"; "")'
}

restarts() {
	status_json "$1" | jq -er --arg c "$2" '.status.containerStatuses[] | select(.name == $c) | .restartCount'
}

phase() { status_json "$1" | jq -er '.status.phase'; }

# task_pid ID: the pid of the container's task in Debian's containerd.
task_pid() { ctr -n podrun tasks ls | awk -v id="$1" '$1 == id && $3 == "RUNNING" { print $2 }'; }

# wait_until SECONDS CMD...: runs CMD every half second until it succeeds.
wait_until() {
	local limit=$1 t0=$SECONDS
	shift
	until "$@" >/dev/null 2>&1; do
		if [ $((SECONDS - t0)) -ge "$limit" ]; then
			echo "FAIL: not within ${limit}s: $*; its last run:"
			"$@" || true
			return 1
		fi
		sleep 0.5
	done
}

cgread() { cat "$CG/$1/$2"; }

main_pid() { systemctl show -p MainPID --value "$UNIT"; }
n_restarts() { systemctl show -p NRestarts --value "$UNIT"; }

# http_get HOST PORT PATH: the body of a GET (bash's /dev/tcp: Debian 12's
# busybox-static wget segfaults).
http_get() {
	timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$0" >&3 && cat <&3' "$1" "$2" "$3" |
		sed '1,/^\r$/d'
}

web_page() { http_get "$1" 8080 /; }

# ---- the checks ----

check_guest() {
	eq "architecture (the one make test-vm asked for)" "$(dpkg --print-architecture)" "$(cat "$SHARE/arch")"
	eq "init (pid 1)" "$(cat /proc/1/comm)" systemd
	eq "/sys/fs/cgroup file system" "$(stat -fc %T $CG)" cgroup2fs
	eq "containerd.service" "$(systemctl is-active containerd)" active
	uname -a
	containerd --version
	runc --version
	cat /etc/debian_version
	log "root cgroup.subtree_control: $(cat $CG/cgroup.subtree_control)"
	log "system state: $(systemctl is-system-running || true)"
	systemctl --failed --no-pager || true
	install -m 0755 "$SHARE/podrun" /usr/local/bin/podrun
	podrun version || podrun --version
}

check_image_import() {
	"$SHARE/mkimage" -o "$STATE/busybox.tar" -ref "$IMAGE"
	pr image import "$STATE/busybox.tar"
	rm -f "$STATE/busybox.tar"
	# podrun found Debian's containerd at its default socket: no private one.
	ctr -n podrun images ls -q | grep -Fx "$IMAGE"
	eq "containerd processes" "$(pgrep -xc containerd)" 1
}

limits_yaml() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: limits
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: $IMAGE
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 250m, memory: 32Mi}
      limits: {cpu: 500m, memory: 64Mi}
  - name: side
    image: $IMAGE
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 100m, memory: 16Mi}
      limits: {cpu: 200m, memory: 32Mi}
EOF
}

# The container cgroups as the kubelet has runc make them on v2: cpu.weight
# from the shares by runc's conversion (1 + (shares-2)*9999/262142), cpu.max
# from the limit over 100 ms, memory.max, memory.oom.group 1 (the kubelet's
# default on v2), memory.swap.max 0 (NoSwap); the Burstable oom_score_adj.
check_limits_container_cgroups() {
	limits_yaml >"$STATE/limits.yaml"
	pr up "$STATE/limits.yaml"
	local uid app side
	uid=$(status_json limits | jq -er .metadata.uid)
	echo "$uid" >"$STATE/limits.uid"
	app=$(cid limits app)
	side=$(cid limits side)
	echo "$app $side" >"$STATE/limits.ids"
	local pod=podrun/pod$uid
	# app: requests 250m/32Mi, limits 500m/64Mi: shares 256 -> weight 10
	eq "app memory.max" "$(cgread "$pod/$app" memory.max)" 67108864
	eq "app cpu.max" "$(cgread "$pod/$app" cpu.max)" "50000 100000"
	eq "app cpu.weight" "$(cgread "$pod/$app" cpu.weight)" 10
	eq "app memory.oom.group" "$(cgread "$pod/$app" memory.oom.group)" 1
	eq "app memory.swap.max" "$(cgread "$pod/$app" memory.swap.max)" 0
	# side: requests 100m/16Mi, limits 200m/32Mi: shares 102 -> weight 4
	eq "side memory.max" "$(cgread "$pod/$side" memory.max)" 33554432
	eq "side cpu.max" "$(cgread "$pod/$side" cpu.max)" "20000 100000"
	eq "side cpu.weight" "$(cgread "$pod/$side" cpu.weight)" 4
	eq "side memory.oom.group" "$(cgread "$pod/$side" memory.oom.group)" 1
	local pid mem adj
	pid=$(task_pid "$app")
	eq "app's process cgroup" "$(cat "/proc/$pid/cgroup")" "0::/$pod/$app"
	# Burstable: 1000 - 1000 * request / MemTotal (the kubelet's policy.go).
	mem=$(awk '/^MemTotal:/ { print $2 * 1024 }' /proc/meminfo)
	adj=$((1000 - 1000 * 33554432 / mem))
	eq "app oom_score_adj" "$(cat "/proc/$pid/oom_score_adj")" "$adj"
}

# The pod cgroup as the kubelet's ResourceConfigForPod: shares from the sum
# of the requests (350m -> 358 -> weight 14), cpu.max and memory.max from
# the sums of the limits; no pids limit (the kubelet's default
# --pod-max-pids -1) and no memory.oom.group of its own.
check_limits_pod_cgroup() {
	local pod
	pod=podrun/pod$(cat "$STATE/limits.uid")
	log "$pod cgroup.controllers: $(cgread "$pod" cgroup.controllers)"
	eq "pod memory.max" "$(cgread "$pod" memory.max)" 100663296
	eq "pod cpu.max" "$(cgread "$pod" cpu.max)" "70000 100000"
	eq "pod cpu.weight" "$(cgread "$pod" cpu.weight)" 14
	eq "pod pids.max" "$(cgread "$pod" pids.max)" max
	eq "pod memory.oom.group" "$(cgread "$pod" memory.oom.group)" 0
	eq "pod cgroup.procs (processes live in the containers' cgroups)" "$(cgread "$pod" cgroup.procs)" ""
	systemd-cgls --no-pager "/$pod" || true
}

# systemd owns the cgroup root: a daemon-reload (as every unit install does)
# must leave podrun's tree and its controllers alone.
check_limits_after_daemon_reload() {
	local pod app side
	pod=podrun/pod$(cat "$STATE/limits.uid")
	read -r app side <"$STATE/limits.ids"
	systemctl daemon-reload
	systemctl restart containerd
	wait_until 30 ctr version
	eq "pod memory.max" "$(cgread "$pod" memory.max)" 100663296
	eq "pod cpu.max" "$(cgread "$pod" cpu.max)" "70000 100000"
	eq "app cpu.max" "$(cgread "$pod/$app" cpu.max)" "50000 100000"
	eq "app memory.max" "$(cgread "$pod/$app" memory.max)" 67108864
	eq "phase" "$(phase limits)" Running
}

check_limits_down() {
	local pod app side
	pod=podrun/pod$(cat "$STATE/limits.uid")
	read -r app side <"$STATE/limits.ids"
	pr down "$STATE/limits.yaml"
	eq "pod cgroup left" "$(ls -d "$CG/$pod" 2>/dev/null)" ""
	eq "containers left" "$(ctr -n podrun containers ls -q | grep -Fx -e "$app" -e "$side")" ""
}

check_oomkilled() {
	cat >"$STATE/oom.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: oom
spec:
  restartPolicy: Never
  containers:
  - name: hog
    image: $IMAGE
    command: ["tail", "/dev/zero"]
    resources:
      limits: {memory: 20Mi}
EOF
	local code=0
	pr up --wait=completion "$STATE/oom.yaml" 2>"$STATE/oom.err" || code=$?
	cat "$STATE/oom.err"
	eq "up's exit code" "$code" 1
	grep -F 'container "hog" exited with code 137 (OOMKilled)' "$STATE/oom.err"
	local term
	term=$(status_json oom | jq -c '.status.containerStatuses[0].state.terminated | {reason, exitCode}')
	eq "hog's state" "$term" '{"reason":"OOMKilled","exitCode":137}'
	pr down "$STATE/oom.yaml"
}

web_yaml() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: httpd
    image: $IMAGE
    command: ["sh", "-c", "echo podrun-vm-web >/var/www/index.html && exec httpd -f -p 8080 -h /var/www"]
    ports:
    - {containerPort: 8080, hostPort: 8080}
    resources:
      limits: {cpu: 200m, memory: 32Mi}
EOF
}

# `systemctl enable --now` of the shipped unit returns at READY=1, which the
# daemon sends after its first sync: the pod is Running by then.
check_daemon_enable_notify() {
	mkdir -p "$MANIFESTS"
	web_yaml >"$MANIFESTS/web.yaml"
	install -m 0644 "$SHARE/podrun-daemon.service" /etc/systemd/system/
	systemctl daemon-reload
	timeout 180 systemctl enable --now "$UNIT"
	eq "unit state" "$(systemctl is-active "$UNIT")" active
	eq "Type" "$(systemctl show -p Type --value "$UNIT")" notify
	eq "web phase right after enable --now" "$(phase "web-$NODE")" Running
	eq "daemon /readyz" "$(http_get 127.0.0.1 10259 /readyz)" ok
	cid "web-$NODE" httpd >"$STATE/web.id"
}

check_hostport() {
	eq "http://127.0.0.1:8080/" "$(web_page 127.0.0.1)" podrun-vm-web
	local ip
	ip=$(ip -4 -o addr show dev eth0 | awk '{ sub(/\/.*/, "", $4); print $4 }')
	eq "http://$ip:8080/ (the guest's address)" "$(web_page "$ip")" podrun-vm-web
}

# web_snapshot: the container's id, its task's pid and its restart count.
web_snapshot() {
	local id
	id=$(cid "web-$NODE" httpd)
	echo "$id pid=$(task_pid "$id") restarts=$(restarts "web-$NODE" httpd)"
}

check_daemon_restart_adopts() {
	local before after pid0
	before=$(web_snapshot)
	pid0=$(main_pid)
	timeout 180 systemctl restart "$UNIT"
	eq "unit state" "$(systemctl is-active "$UNIT")" active
	[ "$(main_pid)" != "$pid0" ] || { echo "FAIL: MainPID unchanged ($pid0) after a restart"; return 1; }
	after=$(web_snapshot)
	eq "web container after the restart" "$after" "$before"
	eq "served" "$(web_page 127.0.0.1)" podrun-vm-web
}

check_daemon_stop_keeps_pods() {
	local before
	before=$(web_snapshot)
	trap 'systemctl start "$UNIT"' EXIT # for the checks after this one, whatever happens here
	timeout 180 systemctl stop "$UNIT"
	eq "unit state" "$(systemctl is-active "$UNIT" || true)" inactive
	eq "web container with the daemon stopped" "$(web_snapshot)" "$before"
	eq "served" "$(web_page 127.0.0.1)" podrun-vm-web
	trap - EXIT
	timeout 180 systemctl start "$UNIT"
	eq "web container after the start" "$(web_snapshot)" "$before"
}

# A liveness probe that always fails: the daemon's supervisor kills and
# restarts the container, with the kubelet's back-off in between
# (CrashLoopBackOff, 10 s after the first restart).
check_probe_restart_backoff() {
	cat >"$MANIFESTS/probe.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: probe
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: $IMAGE
    command: ["sleep", "3600"]
    livenessProbe:
      exec: {command: ["false"]}
      timeoutSeconds: 10
      periodSeconds: 1
      failureThreshold: 1
EOF
	local pod=probe-$NODE t0=$SECONDS seen_backoff="" n=0 j
	wait_until 60 status_json "$pod"
	while [ $((SECONDS - t0)) -lt 150 ]; do
		j=$(status_json "$pod" 2>/dev/null) || { sleep 0.5; continue; }
		n=$(jq -r '.status.containerStatuses[0].restartCount // 0' <<<"$j")
		if [ "$(jq -r '.status.containerStatuses[0].state.waiting.reason // ""' <<<"$j")" = CrashLoopBackOff ]; then
			[ -n "$seen_backoff" ] || log "CrashLoopBackOff at restartCount $n after $((SECONDS - t0)) s"
			seen_backoff=1
		fi
		if [ "$n" -ge 2 ] && [ -n "$seen_backoff" ]; then
			break
		fi
		sleep 0.5
	done
	log "last status: $(jq -c '.status.containerStatuses[0] | {restartCount, state, lastState}' <<<"$j")"
	[ "$n" -ge 2 ] || { echo "FAIL: restartCount $n after 150 s, want >= 2"; return 1; }
	[ -n "$seen_backoff" ] || { echo "FAIL: never saw waiting reason CrashLoopBackOff"; return 1; }
	eq "last termination reason" "$(jq -r '.status.containerStatuses[0].lastState.terminated.reason' <<<"$j")" Error
	journalctl -u "$UNIT" --no-pager | grep -i -m3 'liveness' || true
	rm "$MANIFESTS/probe.yaml"
	wait_until 90 sh -c "! podrun status $pod >/dev/null 2>&1"
}

# The shipped unit's watchdog (WatchdogSec=60s), then a shorter one: a
# daemon alive pings it and stays; a hung one (SIGSTOP) is killed by systemd
# and restarted, and the new one adopts the pod untouched.
check_watchdog() {
	eq "WatchdogUSec (shipped unit)" "$(systemctl show -p WatchdogUSec --value "$UNIT")" 1min
	mkdir -p "$DROPIN"
	printf '[Service]\nWatchdogSec=4s\nTimeoutAbortSec=3s\n' >"$DROPIN/watchdog.conf"
	systemctl daemon-reload
	timeout 180 systemctl restart "$UNIT"
	local pid n before
	pid=$(main_pid)
	n=$(n_restarts)
	before=$(web_snapshot)
	sleep 12
	eq "MainPID after 12 s with a 4 s watchdog" "$(main_pid)" "$pid"
	eq "NRestarts" "$(n_restarts)" "$n"
	kill -STOP "$pid"
	log "stopped the daemon (pid $pid)"
	wait_until 60 sh -c "[ \"\$(systemctl show -p NRestarts --value $UNIT)\" -gt $n ] && [ \"\$(systemctl is-active $UNIT)\" = active ]"
	journalctl -u "$UNIT" --no-pager | grep -F 'Watchdog timeout'
	[ "$(main_pid)" != "$pid" ] || { echo "FAIL: the hung daemon was not replaced"; return 1; }
	eq "web container after the watchdog's restart" "$(web_snapshot)" "$before"
	rm "$DROPIN/watchdog.conf"
	systemctl daemon-reload
}

# With --stop-pods-on-exit, `systemctl stop` stops the pods too.
check_stop_pods_on_exit() {
	mkdir -p "$DROPIN"
	local exec
	exec=$(systemctl show -p ExecStart --value "$UNIT" | sed -n 's/.*argv\[\]=\([^;]*\);.*/\1/p')
	exec=${exec% }
	log "ExecStart: $exec"
	printf '[Service]\nExecStart=\nExecStart=%s --stop-pods-on-exit\n' "$exec" >"$DROPIN/stop-pods.conf"
	systemctl daemon-reload
	timeout 180 systemctl restart "$UNIT"
	local id
	id=$(cid "web-$NODE" httpd)
	eq "web container adopted" "$id" "$(cat "$STATE/web.id")"
	timeout 180 systemctl stop "$UNIT"
	eq "containers in namespace podrun" "$(ctr -n podrun containers ls -q)" ""
	eq "tasks in namespace podrun" "$(ctr -n podrun tasks ls -q)" ""
	eq "pod cgroups" "$(ls -d $CG/podrun/pod* 2>/dev/null)" ""
	if web_page 127.0.0.1 >/dev/null 2>&1; then
		echo "FAIL: port 8080 still answers"
		return 1
	fi
	systemctl disable "$UNIT"
	rm -rf "$DROPIN" /etc/systemd/system/$UNIT.service "$MANIFESTS"/*.yaml
	systemctl daemon-reload
}

# The host leak check (.ci/leakcheck.sh) against the snapshot taken before
# the checks, and what is left in Debian's containerd.
check_leakcheck() {
	bash "$SHARE/leakcheck.sh" "$STATE/snap"
	eq "containers" "$(ctr -n podrun containers ls -q)" ""
	eq "tasks" "$(ctr -n podrun tasks ls -q)" ""
	eq "active snapshots" "$(ctr -n podrun snapshots ls | awk 'NR > 1 && $NF != "Committed"')" ""
	eq "podrun processes" "$(pgrep -ax podrun || true)" ""
	eq "pod cgroups" "$(ls -d $CG/podrun/pod* 2>/dev/null)" ""
}

# ---- run them ----

echo "podrun-vm: $(uname -m), $(nproc) cpus, $(awk '/^MemTotal:/ { print $2 " kB" }' /proc/meminfo), $(uname -r), $(containerd --version | cut -d' ' -f3), runc $(runc --version | awk 'NR == 1 { print $3 }')" | tee "$OUT/guest"
bash "$SHARE/leakcheck.sh" --snapshot "$STATE/snap"
pass=0 fail=0
for name in "${PLAN[@]}"; do
	fn=check_${name//-/_}
	t0=$SECONDS
	echo "podrun-vm: --- $name"
	# A background subshell, so that set -e holds inside the check.
	(
		set -euo pipefail
		"$fn"
	) >"$OUT/logs/$name.log" 2>&1 &
	wait $!
	rc=$?
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $name ($((SECONDS - t0)) s)" | tee -a "$OUT/checks"
	else
		fail=$((fail + 1))
		echo "FAIL $name ($((SECONDS - t0)) s, exit $rc)" | tee -a "$OUT/checks"
		tail -n 30 "$OUT/logs/$name.log"
	fi
done
journalctl -b --no-pager >"$OUT/journal.txt" 2>&1 || true
echo "podrun-vm: RESULT $pass passed, $fail failed" | tee "$OUT/done"
