#!/bin/bash
# Plan quality: every planner's predicted overhead and planning time at 70,
# 50, 33 and 25% of each net's liveness peak, and where each net's floor lies.
# Prints markdown; bench/plan-quality.md records a run.
#   MEMPLAN=./memplan bash bench/plan-quality.sh > out.md
#   FRAMEWORK=pytorch PLANNERS="chain greedy" bash bench/plan-quality.sh
# Overheads are memplan's own predictions (roofline times of the examples'
# device) against the unconstrained run: liveness with the default
# algorithms.  The main table plans with --workspace none (the cost of the
# memory saving alone, as checkpointing papers report it); the last column is
# auto with the default --workspace dynamic, which may also pick faster
# convolution algorithms where the plan leaves room.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
OUT=bench/out
mkdir -p "$OUT"
PLANNERS=${PLANNERS:-chain greedy chen checkpoint-blocks superneurons tf-swap tensile}

# FRAMEWORK=pytorch: the same models as `memplan gen --framework pytorch
# --grads set_to_none` builds them, whose liveness peak is what PyTorch
# allocates (bench/fidelity.md): the peak MONeT's and DTR's fractions are of
if [ "${FRAMEWORK:-}" = pytorch ]; then
	NETS=
	for m in resnet50 resnet152 vgg16 unet mobilenet-v2 densenet121 gpt2-small bert-base; do
		$M gen $m --framework pytorch --grads set_to_none -o "$OUT/pt-$m.json"
		NETS="$NETS $OUT/pt-$m.json"
	done
else
	[ -f "$OUT/mobilenet-v2.json" ] || $M gen mobilenet-v2 -o "$OUT/mobilenet-v2.json"
	NETS="examples/resnet50-b32.json examples/resnet152-b32.json examples/vgg16-b64.json examples/unet.json
$OUT/mobilenet-v2.json examples/densenet121-b32.json examples/gpt2-small.json examples/bert-base.json"
fi

num() { sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p" | head -n 1; }

# one cell: "+4.9% 0.11 s" or "- 0.05 s" (user + sys CPU seconds)
cell() { # net budget planner workspace
	local t fits ov
	/usr/bin/time -o "$OUT/pq.time" -f "%U %S" $M plan "$1" --budget "$2" --planner "$3" --workspace "$4" \
		--format json > "$OUT/pq.json" 2>/dev/null
	t=$(tail -n 1 "$OUT/pq.time" | awk '{ printf "%.2f", $1 + $2 }')
	fits=$(grep -c '"fits": true' "$OUT/pq.json")
	ov=$(num overhead < "$OUT/pq.json")
	if [ "$fits" = 1 ]; then
		awk -v o="$ov" -v t="$t" 'BEGIN { printf "%+.1f%% %s s", 100 * o, t }'
	else
		printf -- "- %s s" "$t"
	fi
}

echo "### $(date -u +%Y-%m-%d), $(nproc) CPUs, $(cc --version | head -n 1)"
echo
for f in $NETS; do
	name=$(basename "$f" .json)
	live=$($M analyze "$f" --strategy liveness --format json | num peak_bytes)
	lmin=$($M analyze "$f" --format json | num layer_min_bytes)
	res=$($M check "$f" --format json | awk '/"parameter"|"parameter_gradient"|"optimizer_state"/ { gsub(/[^0-9]/, "", $2); s += $2 } END { print s + 0 }')
	echo "#### $name"
	echo
	awk -v l="$live" -v m="$lmin" -v r="$res" 'BEGIN {
		printf "liveness peak %.1f MiB; layer-wise minimum %.1f MiB (%.1f%%); parameters, their gradients and optimizer state %.1f MiB (%.1f%%)\n",
			l / 1048576, m / 1048576, 100 * m / l, r / 1048576, 100 * r / l }'
	echo
	printf "| budget |"
	for p in $PLANNERS; do printf " %s |" "$p"; done
	echo " auto, dynamic workspace |"
	printf "|---|"
	for p in $PLANNERS; do printf -- "---|"; done
	echo "---|"
	for pct in 70 50 33 25; do
		b=$((live / 100 * pct))
		row="| ${pct}% |"
		if [ "$b" -lt "$lmin" ]; then
			echo "$row below the layer-wise minimum: no schedule at layer granularity fits |"
			continue
		fi
		for p in $PLANNERS; do
			row="$row $(cell "$f" "$b" "$p" none) |"
		done
		row="$row $(cell "$f" "$b" auto dynamic)"
		c=$(sed -n 's/.*"planner": "\([^"]*\)".*/\1/p' "$OUT/pq.json" | head -n 1)
		grep -q '"fits": true' "$OUT/pq.json" && row="$row ($c)"
		echo "$row |"
	done
	echo
done
