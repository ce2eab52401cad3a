#!/bin/sh
# gocheck.sh GO: fails with a clear message unless GO (a command or a path)
# is a Go at least as new as go.mod's `go` line. `make` looks for Go on PATH
# and then in /usr/local/go/bin (where the official tarball goes, and off
# sudo's PATH).
go=${1:-go}
want=$(awk '$1 == "go" { print $2; exit }' go.mod)
hint="podrun needs Go $want or newer to build (go.mod); Debian 12's golang package is 1.19, too old.
Install Go from https://go.dev/dl/ into /usr/local/go (found there even under sudo), or name
it: make GO=/path/to/go. A release tarball from 'make dist' needs no Go on the device."
if ! command -v "$go" >/dev/null 2>&1; then
	printf 'make: Go not found (not on PATH, not in /usr/local/go/bin).\n%s\n' "$hint" >&2
	exit 1
fi
# In the module's directory a Go >= 1.21 switches to the toolchain go.mod
# asks for (GOTOOLCHAIN=auto) and reports that one; an older Go fails here.
if ! have=$("$go" env GOVERSION 2>/dev/null) || [ -z "$have" ]; then
	printf 'make: %s is too old for this module (%s).\n%s\n' "$(command -v "$go")" "$("$go" version 2>&1)" "$hint" >&2
	exit 1
fi
have=${have#go}
have=${have%%[!0-9.]*} # go1.27rc1 -> 1.27
if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" != "$want" ]; then
	printf 'make: %s is Go %s.\n%s\n' "$(command -v "$go")" "$have" "$hint" >&2
	exit 1
fi
