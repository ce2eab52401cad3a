#!/usr/bin/env bash
# dist.sh OUTDIR ARCH...: the release tarballs, one per architecture (amd64,
# arm64, armv7), each podrun-VERSION-linux-ARCH.tar.gz holding the install
# tree under /usr/local (bin/podrun, lib/systemd/system/podrun-daemon.service,
# share/doc/podrun/), and OUTDIR/SHA256SUMS; OUTDIR/SIZES lists the binaries.
# A board needs the tarball and its distribution's containerd:
#   tar -xzf podrun-VERSION-linux-arm64.tar.gz -C /usr/local --strip-components=1
#
# Reproducible: the same commit gives the same bytes (static, -trimpath, no
# build id or VCS stamp; tar with sorted names, fixed owner and mtime, gzip -n).
# Environment (make dist sets them): GO, VERSION, SOURCE_DATE_EPOCH, MAKE.
set -euo pipefail
export LC_ALL=C
umask 022
out=$1
shift
: "${VERSION:?}" "${SOURCE_DATE_EPOCH:?}"
go=${GO:-go}
make=${MAKE:-make}

rm -rf "$out"
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
: >"$out/SIZES"
for arch in "$@"; do
	case "$arch" in
	amd64 | arm64) goarch=$arch goarm= ;;
	armv7) goarch=arm goarm=7 ;;
	*)
		echo "dist: unknown architecture $arch (amd64, arm64, armv7)" >&2
		exit 2
		;;
	esac
	name=podrun-$VERSION-linux-$arch
	bin=$stage/podrun-$arch
	CGO_ENABLED=0 GOOS=linux GOARCH=$goarch GOARM=$goarm "$go" build -trimpath -buildvcs=false -tags containers_image_openpgp \
		-ldflags "-s -w -buildid= -X main.version=$VERSION" -o "$bin" .
	"$make" --no-print-directory -s install-files PODRUN_BINARY="$bin" DESTDIR="$stage/root-$arch" PREFIX=/usr/local
	mv "$stage/root-$arch/usr/local" "$stage/$name"
	tar --format=gnu --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--mode=u+w,go-w -C "$stage" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
	echo "dist: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1); podrun $(stat -c %s "$bin") bytes)" >>"$out/SIZES"
done
(cd "$out" && sha256sum -- *.tar.gz >SHA256SUMS)
cat "$out/SIZES"
