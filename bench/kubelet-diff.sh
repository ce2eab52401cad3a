#!/usr/bin/env bash
# kubelet-diff.sh: the real kubelet as the judge of podrun's pod status
# (issue 28's `make kubelet-diff`). Every Pod manifest of the e2e suite that a
# standalone kubelet can run as a static pod too (tools/e2epods lists those
# it leaves out, and why) runs on the kubelet anchor, the kubelet and podrun's
# daemon side by side, and oracle.py compares the two pod objects field by
# field. It prints `pod: equal/compared` per pod and the total; it asserts
# nothing.
#
# Needs root and the anchor's kubelet, built once per machine (~15 min):
#   bash $ANCHOR/build.sh           (ANCHOR defaults to /work/shared/kubelet-anchor)
# It builds podrun (CGO_ENABLED=0) into /var/lib/anchor/bin/podrun, the test
# image (podrun.test/busybox:1) and the sandbox image the kubelet's
# containerd starts per pod (registry.k8s.io/pause:3.9: podrun's own static
# binary, `podrun pause`) as archives with the project's test image builder
# (tools/mkimage), starts the anchor, runs the oracle and stops the anchor on
# any exit. Run it through the e2e lock: `make kubelet-diff`.
#
# PARALLEL (4) pods at a time; ONLY=REGEXP runs the pods whose name matches
# (grep -E) alone; OUT (a temp dir, removed) keeps the pod JSON and the full
# report (report.txt) when set; extra arguments go to oracle.py (e.g.
# --ignore REGEXP).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ANCHOR=${ANCHOR:-/work/shared/kubelet-anchor}
PARALLEL=${PARALLEL:-4}
GO=${GO:-go}

log() { printf 'kubelet-diff: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (the anchor's namespace, containerds, kubelet): run 'sudo make kubelet-diff'"
[[ -f $ANCHOR/oracle.py && -f $ANCHOR/start.sh ]] || die "no kubelet anchor at $ANCHOR (set ANCHOR)"
# shellcheck source=/dev/null
. "$ANCHOR/env.sh"
[[ -x $KUBELET ]] || die "no kubelet at $KUBELET: build it once with 'bash $ANCHOR/build.sh' (~15 min)"
python3 -c 'import yaml' 2>/dev/null || die "oracle.py needs python3-yaml"

TMP=$(mktemp -d /tmp/kubelet-diff.XXXXXX)
KEEP_OUT=${OUT:-}
OUT=${OUT:-$TMP/out}
started=""
cleanup() {
	local rc=$?
	if [[ -n $started ]]; then
		log "stopping the anchor"
		bash "$ANCHOR/stop.sh" >&2 || rc=1
	fi
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building podrun (CGO_ENABLED=0) into $PODRUN"
(cd "$REPO" && CGO_ENABLED=0 $GO build -tags containers_image_openpgp -o "$TMP/podrun" .)
mkdir -p "$(dirname "$PODRUN")"
install -m 0755 "$TMP/podrun" "$PODRUN"

log "building the image archives"
mkdir -p "$TMP/img" "$TMP/pods"
(cd "$REPO" && $GO run ./tools/mkimage -o "$TMP/img/busybox.tar" -ref podrun.test/busybox:1)
(cd "$REPO" && $GO run ./tools/mkimage -o "$TMP/img/pause.tar" -ref registry.k8s.io/pause:3.9 \
	-file "$TMP/podrun:/pause" -cmd "/pause pause")

log "extracting the e2e suite's pod manifests"
(cd "$REPO" && $GO run ./tools/e2epods -src e2e -o "$TMP/pods" -suite-image podrun.test/busybox:1 \
	-absent podrun.test/in-does-not-exist:1)

if [[ -n ${ONLY:-} ]]; then
	for f in "$TMP/pods"/*.yaml; do
		basename "$f" .yaml | grep -Eq -- "$ONLY" || rm "$f"
	done
fi
compgen -G "$TMP/pods/*.yaml" >/dev/null || die "no pod to run (ONLY=${ONLY:-})"

log "starting the anchor"
started=1
IMG=$TMP/img bash "$ANCHOR/start.sh" >&2

log "running $(find "$TMP/pods" -name '*.yaml' | wc -l) pods through the oracle, $PARALLEL at a time"
mkdir -p "$OUT"
python3 "$ANCHOR/oracle.py" --parallel "$PARALLEL" --ignore-setup --out "$OUT" "$@" "$TMP/pods"/*.yaml >"$TMP/report.txt"
cat "$TMP/report.txt"
if [[ -n $KEEP_OUT ]]; then
	cp -r "$TMP/pods" "$OUT/pods"
	log "pod JSON, manifests and report.txt kept in $OUT"
fi
