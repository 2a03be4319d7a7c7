#!/bin/bash
# The host backend's peak against the prediction, on the large examples:
# each net planned at 60% of its liveness peak by every planner that swaps
# or recomputes, then run once by `memplan verify --device host` on the
# virtual clock (the default) and on the wall clock.  Prints markdown;
# bench/verify-host.md records a run.  Slow: the host hashes every byte
# (tens of GiB per iteration for the big nets).
#   MEMPLAN=./memplan bash bench/verify-host.sh > out.md
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
OUT=bench/out
mkdir -p "$OUT"
NETS=${NETS:-"alexnet resnet50-b32 vgg16-b64 unet densenet121-b32 inception-v4-b32 bert-base"}
PLANNERS=${PLANNERS:-"superneurons tf-swap tensile greedy"}

num() { sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p" | head -n 1; }

echo "### $(date -u +%Y-%m-%d), $(nproc) CPUs"
echo
echo "| net | planner | predicted peak B | virtual clock: measured B | dev | wall clock: measured B | dev | host s/iter |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for n in $NETS; do
	live=$($M analyze "examples/$n.json" --strategy liveness --format json | num peak_bytes)
	budget=$((live / 100 * 60))
	for p in $PLANNERS; do
		plan="$OUT/vh-$n-$p.json"
		if ! $M plan "examples/$n.json" --budget "$budget" --planner "$p" -o "$plan" >/dev/null 2>&1; then
			echo "| $n | $p | - | no plan at 60% | | | | |"
			continue
		fi
		row="| $n | $p |"
		for clock in virtual wall; do
			$M verify "$plan" --iters 1 --warmup 0 --clock $clock --tolerance-peak 100 \
				--report "$OUT/vh.json" >/dev/null 2>&1
			pred=$(sed -n '/"total": {/,/"phases"/p' "$OUT/vh.json" | sed -n '/"peak_bytes": {/,/}/p' | num predicted)
			meas=$(sed -n '/"total": {/,/"phases"/p' "$OUT/vh.json" | sed -n '/"peak_bytes": {/,/}/p' | num measured)
			wall=$(sed -n '/"timing": {/,/}/p' "$OUT/vh.json" | num wall_ms)
			[ $clock = virtual ] && row="$row $pred |"
			row="$row $meas | $(awk -v m="$meas" -v p="$pred" 'BEGIN { printf "%+.2f%%", 100 * (m / p - 1) }') |"
		done
		echo "$row $(awk -v w="$wall" 'BEGIN { printf "%.1f", w / 1000 }') |"
	done
done
