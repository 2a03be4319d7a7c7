#!/bin/bash
# Is `memplan plan` (dynamic workspace, the default) ever slower than the
# same planner with --workspace none, or without a plan where none has one?
# It has more choices, so it should not be.  Usage:
#   bash bench/dyn-vs-none.sh "PLANNERS" "PCTS" NET.json...
# One line per cell: net, share of liveness (--budget P%), planner, both
# iteration times (ms; '-': no plan), and SLOWER or NO PLAN where dynamic
# loses; a last line counts the cells and the losses.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
planners=$1 pcts=$2
shift 2
ms() { sed -n 's/^iteration time *\([0-9.]*\) ms.*/\1/p'; }
cells=0 lost=0
for f in "$@"; do
	for pct in $pcts; do
		for p in $planners; do
			a=$($M plan "$f" --budget "$pct%" --planner "$p" 2>/dev/null | ms)
			b=$($M plan "$f" --budget "$pct%" --planner "$p" --workspace none 2>/dev/null | ms)
			v=
			if [ -n "$b" ] && { [ -z "$a" ] || awk "BEGIN { exit !($a > $b) }"; }; then
				v=$([ -z "$a" ] && echo " NO PLAN" || echo " SLOWER")
				lost=$((lost + 1))
			fi
			cells=$((cells + 1))
			echo "$(basename "$f" .json) $pct% $p dynamic ${a:--} none ${b:--}$v"
		done
	done
done
echo "$cells cells, dynamic slower or without a plan in $lost"
