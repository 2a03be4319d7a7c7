#!/bin/bash
# Plan identity: a digest of the plan every planner writes for every example
# at 90, 70 and 50% of its liveness peak.  A refactoring that must not change
# behaviour keeps this output byte for byte:
#   MEMPLAN=./memplan bash bench/plan-identity.sh > before.txt
#   ... change ...
#   MEMPLAN=./memplan bash bench/plan-identity.sh | diff before.txt -
# A planner that finds nothing under a budget prints "-" (its refusal is part
# of the behaviour too).  optimal is left out: its solver's time limit makes
# its answer depend on the machine.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PLANNERS="auto superneurons tf-swap tensile greedy chain chen checkpoint-blocks"

num() { sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p" | head -n 1; }

for f in examples/*.json; do
	live=$($M analyze "$f" --strategy liveness --format json | num peak_bytes)
	for pct in 90 70 50; do
		b=$((live / 100 * pct))
		for p in $PLANNERS; do
			rm -f "$T/p.json"
			if $M plan "$f" --budget "$b" --planner "$p" -o "$T/p.json" > /dev/null 2>&1 && [ -f "$T/p.json" ]; then
				d=$(sha256sum < "$T/p.json" | cut -c1-16)
			else
				d=-
			fi
			printf '%s %d%% %s %s\n' "$(basename "$f" .json)" "$pct" "$p" "$d"
		done
	done
done
