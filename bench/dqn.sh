#!/bin/bash
# The DQN planner against greedy, chain and optimal on the paper's nets
# (ResNet, VGG, U-Net) at 70, 50 and 33% of each net's liveness peak
# (memory reductions of 30, 50 and 67%).  Prints markdown; bench/plan-quality.md
# records a run ("The DQN planner").
#   MEMPLAN=./memplan bash bench/dqn.sh > out.md
# Every planner plans with --workspace none (the cost of the memory saving
# alone).  dqn runs with its default 40 episodes from seeds 1, 2 and 3; its
# cell is seed 1's, then the range over the three seeds.  optimal runs with
# a 60 s limit (above its size limit, ResNet-50, it returns greedy's
# recompute-only plan with its LP relaxation's floor, and says so); auto is
# the fastest of the near-linear planners (swapping ones included).  A
# budget below the layer-wise minimum gets one row saying so.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
OUT=bench/out
mkdir -p "$OUT"
NETS=${NETS:-"examples/resnet50-b32.json examples/vgg16-b64.json examples/unet.json"}
PCTS=${PCTS:-"70 50 33"}
LIMIT=${LIMIT:-60}

num() { sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p" | head -n 1; }

# run NET BUDGET PLANNER [ARGS...]: sets fits, ov (percent), cpu (user + sys s), train (s)
run() {
	local f=$1 b=$2 p=$3
	shift 3
	/usr/bin/time -o "$OUT/dqn.time" -f "%U %S" $M plan "$f" --budget "$b" --planner "$p" --workspace none \
		--format json "$@" > "$OUT/dqn.json" 2> "$OUT/dqn.err"
	cpu=$(tail -n 1 "$OUT/dqn.time" | awk '{ printf "%.2f", $1 + $2 }')
	fits=$(grep -c '"fits": true' "$OUT/dqn.json")
	ov=$(num overhead < "$OUT/dqn.json" | awk '{ printf "%+.1f", 100 * $1 }')
	train=$(num dqn_train_s < "$OUT/dqn.json" | awk '{ printf "%.2f", $1 }')
}

cell() { if [ "$fits" = 1 ]; then printf "%s%% %s s" "$ov" "$cpu"; else printf -- "- %s s" "$cpu"; fi; }

echo "### $(date -u +%Y-%m-%d), $(nproc) CPUs, $(cc --version | head -n 1)"
echo
echo "| net | budget | dqn (seed 1) | dqn seeds 1-3 | dqn training | greedy | chain | optimal | auto (planner) |"
echo "|---|---|---|---|---|---|---|---|---|"
for f in $NETS; do
	name=$(basename "$f" .json)
	live=$($M analyze "$f" --strategy liveness --format json | num peak_bytes)
	for pct in $PCTS; do
		b=$((live / 100 * pct))
		printf "| %s | %s%% |" "$name" "$pct"
		run "$f" "$b" auto
		if grep -q "below the layer-wise minimum" "$OUT/dqn.err"; then
			printf " below the layer-wise minimum: no schedule at layer granularity fits | | | | | | |\n"
			continue
		fi
		auto="$(cell) ($(sed -n 's/.*"planner": "\([^"]*\)".*/\1/p' "$OUT/dqn.json" | head -n 1))"
		lo= hi= nf=0
		for s in 1 2 3; do
			run "$f" "$b" dqn --seed $s
			[ $s = 1 ] && { d1=$(cell); t1="$train s"; }
			if [ "$fits" = 1 ]; then
				lo=$(awk -v a="${lo:-$ov}" -v b="$ov" 'BEGIN { print (b < a ? b : a) }')
				hi=$(awk -v a="${hi:-$ov}" -v b="$ov" 'BEGIN { print (b > a ? b : a) }')
			else
				nf=$((nf + 1))
			fi
		done
		printf " %s |" "$d1"
		if [ -n "$lo" ]; then printf " %+.1f%% to %+.1f%%" "$lo" "$hi"; fi
		[ $nf -gt 0 ] && printf " (%d of 3 do not fit)" $nf
		printf " | %s |" "$t1"
		for p in greedy chain; do
			run "$f" "$b" $p
			printf " %s |" "$(cell)"
		done
		run "$f" "$b" optimal --time-limit "$LIMIT"
		if grep -q "too large" "$OUT/dqn.err"; then
			printf " refused (too large) |"
		else
			printf " %s |" "$(cell)"
		fi
		printf " %s |\n" "$auto"
	done
done
