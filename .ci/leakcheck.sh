#!/usr/bin/env bash
# Host-level leak check for after the whole test run.
#
#   .ci/leakcheck.sh --snapshot DIR   record the host's state before the tests
#   .ci/leakcheck.sh [DIR]            list what is new since the snapshot in DIR
#                                     (without DIR, everything found counts)
#
# Checks what can be checked reliably from the host: network namespaces
# podrun-*, bridges podrun* with ports attached, veth interfaces, mounts
# mentioning /pods/ or podrun, iptables rules mentioning CNI (minus the chains
# portmap/firewall install once and keep), host-local IP reservations in
# /var/lib/cni/networks, runc state of the e2e namespace, pod cgroups
# (/sys/fs/cgroup[/<controller>]/<namespace>/pod<uid>), containerd shims
# whose containerd socket is gone, private containerds and temp dirs of the
# e2e suite.
# Prints each leak and exits 1 when there is any; reports only, removes nothing.
set -euo pipefail
export LC_ALL=C

netns() { ls -1 /run/netns 2>/dev/null | grep '^podrun-' || true; }

# Bridges named podrun* with ports attached. CNI's bridge plugin never deletes
# its bridge, so an empty podrun0 is the network's plumbing, not a leak.
# (ip, not /sys/class/net: sysfs shows the netns it was mounted in.)
bridges() {
	ip -o -d link show 2>/dev/null | awk -F': ' '
		{ name = $2; sub(/@.*/, "", name) }
		name ~ /^podrun/ && $0 ~ /\\ +bridge / { bridge[name] = 1 }
		match($0, / master [^ ]+ /) { m = substr($0, RSTART + 8, RLENGTH - 9); ports[m] = ports[m] " " name }
		END { for (b in bridge) if (ports[b] != "") print b " (ports:" ports[b] ")" }
	' || true
}

# veth interfaces as "name#ifindex" (kind veth, or named veth*).
veths() {
	ip -o -d link show 2>/dev/null | awk -F': ' '{
		name = $2; sub(/@.*/, "", name)
		if (name ~ /^veth/ || $0 ~ /\\ +veth /) print name "#" $1
	}' || true
}

# Mount points (with their root) mentioning /pods/ or podrun.
mounts() {
	awk '$5 ~ /\/pods\/|podrun/ || $4 ~ /\/pods\// { print $5 " (root " $4 ")" }' /proc/self/mountinfo
}

# iptables-save lines mentioning CNI as "table<TAB>line", chain counters dropped,
# minus the plumbing the portmap and firewall plugins never remove.
iptables_cni() {
	awk '
		/^#/ || /^COMMIT/ || /^$/ { next }
		/^\*/ { table = substr($0, 2); next }
		/CNI/ { if ($0 ~ /^:/) sub(/ \[[0-9]+:[0-9]+\]$/, ""); print table "\t" $0 }
	' "$@" | grep -Ev $'^[^\t]+\t(:CNI-(HOSTPORT-(DNAT|SETMARK|MASQ)|FORWARD|ADMIN) [^ ]+|-A CNI-HOSTPORT-(SETMARK|MASQ) .*|-A (PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING|CNI-FORWARD) .*-j CNI-(HOSTPORT-(DNAT|SETMARK|MASQ)|FORWARD|ADMIN))$' || true
}

ipam_files() {
	[ -d /var/lib/cni/networks ] || return 0
	find /var/lib/cni/networks -type f \( -name '*.*.*.*' -o -name '*:*' \) ! -name 'last_reserved_ip*' 2>/dev/null || true
}

runc_state() { ls -1 /run/containerd/runc/podrun-e2e 2>/dev/null || true; }

# Pod cgroups of podrun's containerd namespaces, in every hierarchy (v1) or
# in the unified one (v2).
pod_cgroups() {
	local d
	for d in /sys/fs/cgroup/podrun*/pod* /sys/fs/cgroup/*/podrun*/pod*; do
		if [ -d "$d" ]; then echo "$d"; fi
	done
}

# containerd shims whose containerd socket is gone, and any shim of the e2e namespace.
shims() {
	local pid args addr ns id
	for pid in $(pgrep -f containerd-shim 2>/dev/null || true); do
		[ -r "/proc/$pid/cmdline" ] || continue
		args=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || continue
		case "$(head -n1 <<<"$args")" in *containerd-shim*) ;; *) continue ;; esac
		addr=$(awk 'prev == "-address" || prev == "--address" { print; exit } { prev = $0 }' <<<"$args")
		ns=$(awk 'prev == "-namespace" || prev == "--namespace" { print; exit } { prev = $0 }' <<<"$args")
		id=$(awk 'prev == "-id" || prev == "--id" { print; exit } { prev = $0 }' <<<"$args")
		if [ -n "$addr" ] && [ ! -S "$addr" ]; then
			echo "pid $pid (namespace $ns, id $id): its containerd $addr is gone"
		elif [ "$ns" = podrun-e2e ]; then
			echo "pid $pid (namespace $ns, id $id): shim of the e2e suite still running"
		fi
	done
}

# Private containerds the e2e suite started and did not stop.
e2e_containerds() {
	local pid
	for pid in $(pgrep -x containerd 2>/dev/null || true); do
		if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'podrun-e2e-'; then
			echo "pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
		fi
	done
}

tmp_dirs() {
	local d
	for d in "${TMPDIR:-/tmp}"/podrun-e2e-* /tmp/podrun-e2e-*; do
		if [ -e "$d" ]; then echo "$d"; fi
	done | sort -u
}

checks=(netns bridges veths mounts iptables ipam_files runc_state pod_cgroups shims e2e_containerds tmp_dirs)

current() {
	case "$1" in
	iptables)
		if command -v iptables-save >/dev/null 2>&1; then
			iptables-save 2>/dev/null | iptables_cni
		fi
		;;
	*) "$1" ;;
	esac
}

if [ "${1:-}" = --snapshot ]; then
	dir=${2:?usage: $0 --snapshot DIR}
	mkdir -p "$dir"
	if command -v iptables-save >/dev/null 2>&1; then
		iptables-save >"$dir/iptables-save.txt" 2>/dev/null || true
	fi
	for c in "${checks[@]}"; do
		[ "$c" = iptables ] && continue
		current "$c" | sort -u >"$dir/$c.txt"
	done
	exit 0
fi

dir=${1:-}
leaks=0
for c in "${checks[@]}"; do
	now=$(current "$c" | sort -u)
	before=""
	if [ -n "$dir" ]; then
		if [ "$c" = iptables ]; then
			[ -f "$dir/iptables-save.txt" ] && before=$(iptables_cni "$dir/iptables-save.txt" | sort -u)
		elif [ -f "$dir/$c.txt" ]; then
			before=$(cat "$dir/$c.txt")
		fi
	fi
	new=$(comm -13 <(printf '%s\n' "$before" | sed '/^$/d') <(printf '%s\n' "$now" | sed '/^$/d'))
	[ -n "$new" ] || continue
	while IFS= read -r line; do
		echo "leakcheck: LEAK: $c: ${line//$'\t'/ }"
		leaks=$((leaks + 1))
	done <<<"$new"
done

if [ "$leaks" -gt 0 ]; then
	echo "leakcheck: FAIL: $leaks things left on the host after the tests" >&2
	exit 1
fi
echo "leakcheck: nothing left on the host"
