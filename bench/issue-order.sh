#!/bin/bash
# A last step of plan_run (plan/planner.c), before and after: each
# planner's predicted iteration time on the given nets at the given shares
# of the liveness peak, from a memplan built without the step (BEFORE) and
# one with it (MEMPLAN, default ./memplan).  Session 21 measured the
# swap-ins issued together in the order of their uses (plan_issue_by_use,
# bench/issue-order.txt, bench/issue-order-pt.txt), session 22 the late
# swap-ins issued earlier (plan_hoist_swapins, bench/hoist.txt,
# bench/hoist-pt.txt):
#   git worktree add /tmp/old 6d673d7 && make -C /tmp/old memplan
#   BEFORE=/tmp/old/memplan bash bench/issue-order.sh \
#       "superneurons tf-swap tensile greedy auto" "70 50 33" examples/*.json
#   BEFORE=/tmp/old/memplan bash bench/issue-order.sh "greedy auto" "50 33 25" bench/out/pt-*.json
# A line per cell: net, share, planner, the time before and after in ms
# ("-": no plan that fits), and the change.  Both steps keep a plan only
# where it fits and is faster, so no cell may get slower: the last line
# counts the cells faster, the same and slower.
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
