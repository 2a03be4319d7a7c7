#!/bin/bash
# Benchmarks: analysis time on generated chains and DAGs of 10^3..10^5 layers
# against `memplan check` (parsing + validation) on the same file, and
# planning time per planner.  Prints markdown; bench/RESULTS.md records runs.
# Each figure is the median user+sys CPU seconds of RUNS runs (default 5).
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
RUNS=${RUNS:-5}
OUT=bench/out
mkdir -p "$OUT"

cpu() { # median user+sys of RUNS runs of "$@"
	for _ in $(seq "$RUNS"); do
		/usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -n 1 | awk '{ printf "%.3f\n", $1 + $2 }'
	done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "### analysis vs check ($(date -u +%Y-%m-%d), $(nproc) CPUs, $RUNS runs, median user+sys s)"
echo
echo "| net | layers | ops | check s | analyze s | analyze / check |"
echo "|---|---|---|---|---|---|"
for kind in chain dag; do
	for n in 1000 10000 100000; do
		f=$OUT/$kind-$n.json
		[ -f "$f" ] || sh bench/mknet.sh "$kind" "$n" > "$f"
		ops=$($M check "$f" --format json | sed -n 's/.*"ops": \([0-9]*\).*/\1/p')
		c=$(cpu $M check "$f")
		a=$(cpu $M analyze "$f" --format json)
		echo "| $kind | $n | $ops | $c | $a | $(awk -v a="$a" -v c="$c" 'BEGIN { printf "%.2f", (c > 0) ? a / c : 0 }') |"
	done
done
echo
echo "### planning time per planner at 70% of the liveness peak (median user+sys s; + fits, - cannot)"
echo
echo "| net | superneurons | tf-swap | tensile |"
echo "|---|---|---|---|"
for f in examples/*.json $OUT/dag-1000.json $OUT/dag-10000.json $OUT/chain-1000.json $OUT/chain-10000.json; do
	peak=$($M analyze "$f" --strategy liveness --format json | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | tail -n 1)
	b=$((peak / 10 * 7))
	row="| $(basename "$f" .json) |"
	for p in superneurons tf-swap tensile; do
		t=$(cpu $M plan "$f" --budget "$b" --planner "$p")
		$M plan "$f" --budget "$b" --planner "$p" >/dev/null 2>&1 && fit=+ || fit=-
		row="$row $t $fit |"
	done
	echo "$row"
done
echo
echo "### predicted overhead per planner per budget (percent of the unconstrained time; - cannot fit)"
echo
echo "| net | budget | superneurons | tf-swap | tensile | arena / max-live (auto) |"
echo "|---|---|---|---|---|---|"
for f in examples/*.json; do
	peak=$($M analyze "$f" --strategy liveness --format json | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | tail -n 1)
	for pct in 90 70 50 30; do
		b=$((peak / 100 * pct))
		row="| $(basename "$f" .json) | ${pct}% |"
		$M plan "$f" --budget "$b" --planner all --format json > "$OUT/plan.json" 2>/dev/null
		for p in superneurons tf-swap tensile; do
			v=$(awk -v p="\"$p\"" '
				$0 ~ "\"planner\": " p { on = 1 }
				on && /"fits"/ { fits = ($2 ~ /true/) }
				on && /"overhead"/ { gsub(/,/, "", $2); printf "%s", fits ? sprintf("%.1f", 100 * $2) : "-"; exit }
			' "$OUT/plan.json")
			row="$row ${v:--} |"
		done
		r=$($M plan "$f" --budget "$b" --format json 2>/dev/null | awk '/"arena_bytes"/ { gsub(/,/, "", $2); a = $2 } /"max_live_bytes"/ { gsub(/,/, "", $2); m = $2 } END { if (m > 0) printf "%.3f", a / m; else printf "-" }')
		echo "$row $r |"
	done
done
