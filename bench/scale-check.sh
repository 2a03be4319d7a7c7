#!/bin/bash
# Scale check, run by .ci/run on the optimised build: a 10^5-layer net with
# no conv layer (bench/mknet.sh fchain: fc, bn, relu in place, dropout) is
# analysed in at most ANALYZE_RATIO (default 4) times the CPU of
# `memplan check` on the same file, and a 10^4-layer one is planned by each
# planner in at most PLAN_SECONDS (default 8) of CPU.  The targets are 2x
# check and about 1 s; the limits leave room for a loaded 2-core CI machine
# (the same command varies 2x there), so they catch a quadratic blow-up, not
# a few percent; bench/plan-quality.md records measured values.  Exit 1 on a
# breach.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
OUT=bench/out
ANALYZE_RATIO=${ANALYZE_RATIO:-4}
PLAN_SECONDS=${PLAN_SECONDS:-8}
mkdir -p "$OUT"
fail=0 ok=0

# user + sys CPU seconds of "$@", output discarded; "failed" where it does
# not exit 0, but for memplan plan's exit 1 with "no planner fits"
# (checkpoint-blocks on the fchain): not a budget it refused unplanned, a
# sanitizer's report, a crash or a missing binary
cpu() {
	local rc

	/usr/bin/time -o "$OUT/scale.time" -f "%U %S" "$@" > /dev/null 2> "$OUT/scale.err"
	rc=$?
	if [ "$rc" != 0 ] && ! { [ "$rc" = 1 ] && grep -q "no planner fits" "$OUT/scale.err"; }; then
		echo failed
		return
	fi
	tail -n 1 "$OUT/scale.time" | awk '{ printf "%.2f", $1 + $2 }'
}
# within X LIMIT: X is a measured number (not "failed") of at most LIMIT
within() { awk -v x="$1" -v l="$2" 'BEGIN { exit !(x ~ /^[0-9.]+$/ && x + 0 <= l + 0) }'; }

for n in 100000 10000; do
	f=$OUT/fchain-$n.json
	[ -f "$f" ] || sh bench/mknet.sh fchain "$n" > "$f"
done

f=$OUT/fchain-100000.json
c=$(cpu $M check "$f")
a=$(cpu $M analyze "$f")
r=$(awk -v a="$a" -v c="$c" 'BEGIN { if (a ~ /^[0-9.]+$/ && c ~ /^[0-9.]+$/) printf "%.2f", (c > 0) ? a / c : 0; else printf "failed" }')
echo "scale: analyze 10^5 layers (no conv): ${a} s CPU, check ${c} s: ${r}x (limit ${ANALYZE_RATIO}x)"
if within "$r" "$ANALYZE_RATIO"; then ok=$((ok + 1)); else fail=$((fail + 1)); fi

f=$OUT/fchain-10000.json
peak=$($M analyze "$f" --strategy liveness --format json | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | tail -n 1)
[ -n "$peak" ] || { echo "scale: $M analyze $f gave no liveness peak" >&2; exit 1; }
for p in greedy chain chen checkpoint-blocks superneurons tf-swap tensile; do
	t=$(cpu $M plan "$f" --budget $((peak / 2)) --planner "$p")
	echo "scale: plan 10^4 layers at 50% with $p: ${t} s CPU (limit ${PLAN_SECONDS} s)"
	if within "$t" "$PLAN_SECONDS"; then ok=$((ok + 1)); else fail=$((fail + 1)); fi
done
echo "scale checks: $ok within their limits, $fail beyond"
[ "$fail" = 0 ]
