#!/usr/bin/env bash
# fuzz.sh FUZZTIME PKG:TARGET ...: runs each fuzz target for FUZZTIME on top
# of its committed corpus (testdata/fuzz). A run that fails with nothing but
# "context deadline exceeded" (the Go toolchain's fuzzing coordinator can
# report its own -fuzztime deadline as a failure when it falls while a
# worker minimizes a new input; no failing input is written) is run once
# more; any other failure, a failing input above all, fails at once.
set -euo pipefail
fuzztime=$1
shift
go=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in "$@"; do
	pkg=${t%%:*} target=${t#*:}
	for attempt in 1 2; do
		echo "fuzz: $target ($pkg, $fuzztime)"
		if "$go" test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "./$pkg" 2>&1 | tee "$out"; then
			break
		fi
		if [[ $attempt == 1 ]] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
			echo "fuzz: $target: the fuzzing coordinator's own deadline, no failing input: once more" >&2
			continue
		fi
		echo "fuzz: $target failed; rerun: go test -run '^\$' -fuzz '^$target\$' ./$pkg" >&2
		exit 1
	done
done
