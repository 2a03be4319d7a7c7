#!/bin/bash
# The lower bound (memplan plan --lower-bound, plan/bound.c) against the best
# plan memplan finds, at 90, 70, 50, 33 and 25% of each net's liveness peak:
# how far the planners may be from the fastest schedule there is, swaps and
# recomputation together.  Prints markdown; bench/plan-quality.md records a
# run.
#   MEMPLAN=./memplan bash bench/bound.sh > out.md
#   NETS="examples/vgg16-b64.json" PCTS="50" WS="none" bash bench/bound.sh
# Only nets whose program stays under the bound's limit (300000 variables:
# VGG-16, U-Net, AlexNet) are worth listing; a larger one prints why not.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
OUT=bench/out
mkdir -p "$OUT"
PCTS=${PCTS:-90 70 50 33 25}
WS=${WS:-none dynamic}
LIMIT=${LIMIT:-600}
if [ -z "${NETS:-}" ]; then
	NETS="examples/alexnet.json examples/vgg16-b64.json examples/unet.json"
	for m in alexnet vgg16 unet; do
		$M gen $m --framework pytorch --grads set_to_none -o "$OUT/pt-$m.json"
		NETS="$NETS $OUT/pt-$m.json"
	done
fi

num() { sed -n "s/^ *\"$1\": \([-0-9.e+]*\).*/\1/p" | tail -n 1; }
str() { sed -n "s/^ *\"$1\": \"\([^\"]*\)\".*/\1/p" | tail -n 1; }

echo "### $(date -u +%Y-%m-%d), $(nproc) CPUs, $(cc --version | head -n 1), time limit $LIMIT s"
echo
echo "| net | budget | workspace | best plan | its overhead | lower bound | plan above it | bound's variables, s |"
echo "|---|---|---|---|---|---|---|---|"
for f in $NETS; do
	name=$(basename "$f" .json)
	live=$($M analyze "$f" --strategy liveness --format json | num peak_bytes)
	for p in $PCTS; do
		b=$((live * p / 100))
		for ws in $WS; do
			$M plan "$f" --budget "$b" --workspace "$ws" --lower-bound --time-limit "$LIMIT" --format json \
				> "$OUT/bound.json" 2> "$OUT/bound.err"
			rc=$?
			if [ $rc = 2 ] || ! grep -q '"lower_bound"' "$OUT/bound.json"; then
				echo "| $name | $p% | $ws | $(head -c 120 "$OUT/bound.err") | | | | |"
				continue
			fi
			fits=$(grep -c '^  "fits": true' "$OUT/bound.json")
			planner=$(str planner < "$OUT/bound.json" | head -n 1)
			t=$(sed -n 's/^  "time_ms": \([-0-9.e+]*\).*/\1/p' "$OUT/bound.json" | head -n 1)
			ov=$(sed -n 's/^  "overhead": \([-0-9.e+]*\).*/\1/p' "$OUT/bound.json" | head -n 1)
			st=$(sed -n '/"lower_bound"/,$p' "$OUT/bound.json" | str status)
			vars=$(sed -n '/"lower_bound"/,$p' "$OUT/bound.json" | num variables)
			secs=$(sed -n '/"lower_bound"/,$p' "$OUT/bound.json" | num seconds)
			if [ "$st" = bound ]; then
				bt=$(sed -n '/"lower_bound"/,$p' "$OUT/bound.json" | num time_ms)
				bo=$(sed -n '/"lower_bound"/,$p' "$OUT/bound.json" | num overhead)
				bcell=$(awk -v o="$bo" -v t="$bt" 'BEGIN { printf "%.1f ms (%+.1f%%)", t, 100 * o }')
				gap=$([ "$fits" = 1 ] && awk -v a="$t" -v b="$bt" 'BEGIN { printf "%.1f%%", 100 * (a / b - 1) }')
			else
				bcell=$st
				gap=
			fi
			if [ "$fits" = 1 ]; then
				pcell="$planner $(awk -v t="$t" 'BEGIN { printf "%.1f ms", t }')"
				ocell=$(awk -v o="$ov" 'BEGIN { printf "%+.1f%%", 100 * o }')
			else
				pcell="none fits"
				ocell=
			fi
			echo "| $name | $p% | $ws | $pcell | $ocell | $bcell | ${gap:-} | $vars, $(awk -v s="$secs" 'BEGIN { printf "%.1f", s }') |"
		done
	done
done
