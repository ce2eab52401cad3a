#!/usr/bin/env bash
# check-dist.sh DISTDIR: `make dist` again, from a copy of the tree at
# another path (a path or a time in a binary or the tar would show), must
# give DISTDIR/SHA256SUMS byte for byte. Cheap: with -trimpath the
# packages' build cache entries do not depend on the path.
# Environment (make check-dist sets them): GO, VERSION, SOURCE_DATE_EPOCH, MAKE.
set -euo pipefail
dist=$1
: "${VERSION:?}" "${SOURCE_DATE_EPOCH:?}"
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
# The tree as git sees it: tracked files and untracked ones not ignored.
git -c safe.directory="$PWD" ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
	tar --null -T - -cf - | (mkdir "$copy/podrun" && tar -xf - -C "$copy/podrun")
(cd "$copy/podrun" && "${MAKE:-make}" --no-print-directory -s dist DIST="$copy/dist" \
	GO="${GO:-go}" VERSION="$VERSION" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" >/dev/null)
if ! cmp -s "$dist/SHA256SUMS" "$copy/dist/SHA256SUMS"; then
	echo "check-dist: make dist is not reproducible: SHA256SUMS differ" >&2
	diff "$dist/SHA256SUMS" "$copy/dist/SHA256SUMS" >&2 || true
	exit 1
fi
echo "check-dist: a second make dist (from $copy/podrun) gives the same SHA256SUMS:"
sed 's/^/  /' "$dist/SHA256SUMS"
