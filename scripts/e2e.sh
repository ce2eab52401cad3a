#!/usr/bin/env bash
# The end-to-end suite (`make e2e`), one suite at a time on the machine (the
# lock). Its whole output goes to the terminal as it runs (and to bin/e2e.log), and a failed run ends
# with what failed: each failed test with the last lines it logged, so that the
# tail of a CI log names the test without the full log at hand.
#   GO=go TIMEOUT=40m scripts/e2e.sh [go test flags...]
# (E2E_LOCK names another lock file, for trying this script beside a running suite.)
set -uo pipefail
GO=${GO:-go}
TIMEOUT=${TIMEOUT:-40m}
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The whole output is kept in bin/e2e.log (not in /tmp: the suite's leak
# check counts what appears there, and another suite may be running).
mkdir -p bin
log=bin/e2e.log
flock "${E2E_LOCK:-/tmp/podrun-e2e.lock}" "$GO" test -count=1 -v -timeout "$TIMEOUT" "$@" ./e2e/... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && exit 0

# A test's lines are those after its "=== RUN/CONT" until the next "=== " line
# (go test -v streams them so); keep the last 12 of each, print the failed ones'.
{
	echo "e2e: FAILED (exit $status); what failed:"
	awk '
		/^=== (RUN|CONT|NAME) / { cur = $3; next }
		/^=== PAUSE / { next }
		/^[ \t]*--- FAIL: / { failed[++n] = $3; line[$3] = $0; next }
		/^(panic:|\*\*\* Test killed|FAIL[ \t]|e2e: FAIL|.*test timed out after)/ { top[++m] = $0 }
		/^(FAIL|PASS|ok)([ \t]|$)|^e2e: / { next }
		cur != "" { k = ++cnt[cur]; buf[cur, k % 12] = $0 }
		END {
			for (i = 1; i <= n; i++) {
				t = failed[i]; print line[t]
				c = cnt[t]; s = c > 12 ? c - 11 : 1
				for (k = s; k <= c; k++) print "    | " buf[t, k % 12]
			}
			for (i = 1; i <= m; i++) print top[i]
		}' "$log"
} >&2
exit "$status"
