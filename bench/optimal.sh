#!/bin/bash
# The exact optimum (optimal: Checkmate's MILP, CBC) beside the best
# near-linear planner, at 70, 50, 33 and 25% of each net's liveness peak.
# Prints markdown; bench/plan-quality.md records a run.
#   LIMIT=60 MEMPLAN=./memplan bash bench/optimal.sh > out.md
# NETS and PCTS (default "70 50 33 25") choose the nets and budgets.
# Cells: overhead of the plan (`-`: no fitting plan) and wall seconds; for
# optimal, "proven" or the bound: no recompute-only plan costs less.  A
# model too large to solve exactly in LIMIT shows the heuristic plan optimal
# returns (named) and its LP relaxation's bound.  All with --workspace none.
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
LIMIT=${LIMIT:-60}
OUT=bench/out
mkdir -p "$OUT"
[ -f "$OUT/mobilenet-v2.json" ] || $M gen mobilenet-v2 -o "$OUT/mobilenet-v2.json"
NETS=${NETS:-"examples/alexnet.json examples/unet.json $OUT/mobilenet-v2.json examples/vgg16-b64.json
examples/resnet50-b32.json examples/densenet121-b32.json examples/resnet152-b32.json examples/gpt2-small.json
examples/bert-base.json"}

num() { sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p" | head -n 1; }

echo "### $(date -u +%Y-%m-%d), $(nproc) CPUs, time limit $LIMIT s"
echo
echo "| net | budget | optimal | its bound | solve s | best other (planner) |"
echo "|---|---|---|---|---|---|"
for f in $NETS; do
	name=$(basename "$f" .json)
	live=$($M analyze "$f" --strategy liveness --format json | num peak_bytes)
	lmin=$($M analyze "$f" --format json | num layer_min_bytes)
	for pct in ${PCTS:-70 50 33 25}; do
		b=$((live / 100 * pct))
		if [ "$b" -lt "$lmin" ]; then
			echo "| $name | $pct% | below the layer-wise minimum | | | |"
			continue
		fi
		s=$(date +%s.%N)
		$M plan "$f" --budget "$b" --planner optimal --workspace none --time-limit "$LIMIT" \
			--format json > "$OUT/opt.json" 2> "$OUT/opt.err"
		e=$(date +%s.%N)
		secs=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }')
		if grep -q "too large" "$OUT/opt.err"; then
			cell="too large: $(sed -n 's/.*(\([0-9]* ops: about [0-9]* variables\).*/\1/p' "$OUT/opt.err")"
			bound=""
		else
			note=$(sed -n 's/.*"note": "\(.*\)".*/\1/p' "$OUT/opt.json")
			base=$(num baseline_time_ms < "$OUT/opt.json")
			if grep -q '"fits": true' "$OUT/opt.json"; then
				cell=$(awk -v o="$(num overhead < "$OUT/opt.json")" 'BEGIN { printf "%+.1f%%", 100 * o }')
			else
				cell="-"
			fi
			case "$note" in
			"proven optimal"*) bound="proven" ;;
			"proven: no plan"*|"no plan that only recomputes fits: step"*) bound="proven: none fits" ;;
			"too large to solve exactly"*"no plan recomputes less than"*)
				bound=$(echo "$note" | sed -n 's/.*less than \([0-9.]*\) ms.*/\1/p' |
					awk -v b="$base" '{ printf ">= +%.1f%% (LP relaxation)", 100 * $1 / b }')
				h=$(echo "$note" | sed -n "s/.*limit: \([a-z-]*\)'s plan.*/\1/p")
				[ -n "$h" ] && cell="$cell ($h)" ;;
			"too large to solve exactly"*)
				bound="LP relaxation: $(echo "$note" | sed -n 's/.*its LP relaxation \([^(]*\) (.*/\1/p')"
				h=$(echo "$note" | sed -n "s/.*limit: \([a-z-]*\)'s plan.*/\1/p")
				[ -n "$h" ] && cell="$cell ($h)" ;;
			*"no plan recomputes less than"*)
				bound=$(echo "$note" | sed -n 's/.*less than \([0-9.]*\) ms.*/\1/p' |
					awk -v b="$base" '{ printf ">= +%.1f%%", 100 * $1 / b }') ;;
			*"does not pack in the arena"*)
				bound=$(echo "$note" | sed -n 's/^the \(proven optimum\|solver.s best plan\) (\([0-9.]*\) ms.*/\1 \2/p' |
					awk -v b="$base" '{ printf "%s +%.1f%% did not pack", $1 == "proven" ? "proven" : "found", 100 * $NF / b }') ;;
			*) bound="none found" ;;
			esac
			grep -q '"fits": true' "$OUT/opt.json" || case "$note" in
				"proven optimal"*|"best found"*) cell="- (arena)" ;; esac
		fi
		other=$($M plan "$f" --budget "$b" --planner all --workspace none --format json 2>/dev/null |
			python3 -c 'import json,sys
d=json.load(sys.stdin); f=[p for p in d["plans"] if p["fits"]]
b=min(f, key=lambda p: p["time_ms"]) if f else None
print("%+.1f%% (%s)" % (100*b["overhead"], b["planner"]) if b else "-")' 2>/dev/null)
		echo "| $name | $pct% | $cell | $bound | $secs | ${other:--} |"
	done
done
