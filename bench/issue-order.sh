#!/bin/bash
# Swap-ins issued together in the order of their uses (plan_run's last
# step, plan/planner.c plan_issue_by_use): each planner's predicted
# iteration time before and after, on the given nets at the given shares of
# the liveness peak.  BEFORE is a memplan built without the step:
#   git worktree add /tmp/old 3a88576 && make -C /tmp/old memplan
#   BEFORE=/tmp/old/memplan bash bench/issue-order.sh \
#       "superneurons tf-swap tensile greedy auto" "70 50 33" examples/*.json
# A line per cell: net, share, planner, the time before and after in ms
# ("-": no plan that fits), and the change.  The step keeps a reordered
# plan only where it fits and is faster, so no cell may get slower: the
# last line counts the cells faster, the same and slower.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
B=${BEFORE:?BEFORE=path to a memplan without the step}
planners=$1 shares=$2
shift 2

ms() { # the predicted time of a plan that fits, else -
	"$@" --format json 2>/dev/null | sed -n 's/.*"time_ms": \([-0-9.e+]*\).*/\1/p;s/.*"fits": \(true\|false\).*/fits \1/p' |
		awk '/^fits/ { f = $2; next } !t { t = $1 } END { print (f == "true" && t != "") ? t : "-" }'
}

faster=0 same=0 slower=0
for f in "$@"; do
	for pct in $shares; do
		for p in $planners; do
			a=$(ms "$B" plan "$f" --budget "$pct%" --planner "$p")
			b=$(ms "$M" plan "$f" --budget "$pct%" --planner "$p")
			d=$(awk -v a="$a" -v b="$b" 'BEGIN {
				if (a == "-" || b == "-") print (a == b) ? "same" : "CHANGED";
				else if (b < a - 1e-9) printf "%+.1f%%\n", 100 * (b - a) / a;
				else if (b > a + 1e-9) printf "SLOWER %+.1f%%\n", 100 * (b - a) / a;
				else print "same" }')
			case $d in same) same=$((same + 1)) ;; SLOWER*|CHANGED) slower=$((slower + 1)) ;; *) faster=$((faster + 1)) ;; esac
			printf '%s %s%% %s %s %s %s\n' "$(basename "$f" .json)" "$pct" "$p" "$a" "$b" "$d"
		done
	done
done
echo "cells: $faster faster, $same the same, $slower slower or changed"
