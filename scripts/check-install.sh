#!/usr/bin/env bash
# check-install.sh: `make install DESTDIR=<temp>` lays out the binary,
# the systemd unit (naming the installed binary and docs) and the docs, for
# the default PREFIX and for a packager's PREFIX=/usr; `make uninstall`
# removes them again.
set -euo pipefail
make=${MAKE:-make}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() {
	echo "check-install: $*" >&2
	find "$root" -printf '  %M %p\n' >&2
	exit 1
}
for prefix in /usr/local /usr; do
	dest=$root$prefix-tree
	"$make" --no-print-directory -s install DESTDIR="$dest" PREFIX="$prefix" >/dev/null
	bin=$dest$prefix/bin/podrun
	unit=$dest$prefix/lib/systemd/system/podrun-daemon.service
	doc=$dest$prefix/share/doc/podrun
	[ -x "$bin" ] || fail "no executable $bin"
	"$bin" --help >/dev/null || fail "$bin --help failed"
	[ "$(stat -c %a "$unit")" = 644 ] || fail "$unit missing or not mode 0644"
	grep -qx "ExecStart=$prefix/bin/podrun daemon .*" "$unit" || fail "$unit does not run $prefix/bin/podrun"
	grep -qx "Documentation=file://$prefix/share/doc/podrun/README.md" "$unit" || fail "$unit does not name $prefix/share/doc/podrun"
	for f in README.md docs/*.md examples/*.yaml; do
		case "$f" in README.md) want=$doc/README.md ;; *) want=$doc/$f ;; esac
		cmp -s "$f" "$want" || fail "$want is not $f"
	done
	"$make" --no-print-directory -s uninstall DESTDIR="$dest" PREFIX="$prefix" >/dev/null
	left=$(find "$dest" -type f)
	[ -z "$left" ] || fail "make uninstall left $left"
	echo "check-install: make install DESTDIR=... PREFIX=$prefix: bin/podrun, lib/systemd/system/podrun-daemon.service, share/doc/podrun; uninstall removes them"
done
