#!/bin/bash
# Where a plan's iteration ends after compute does: the copies still running
# when the compute stream has issued its last action (an op, or a wait: a
# wait at the end is compute waiting, counted as a stall).  An iteration
# waits for every copy (memplan-plan(5), TENSILE III-D; sim_run's time is the
# latest end of the three streams), so a swap-out issued near the end
# (optimizer state kept on the host, swapped in for its update, out after
# it) adds what runs past compute to the iteration: `memplan plan` reports it
# as "copies after compute ends" (tail_ms).  For each cell: the predicted
# time, when compute ends, the tail between them (both from `memplan plan
# --format json`), the overhead with and without it, and the copy that ends
# last (from the plan file's schedule).  Needs jq (Debian's jq).
#   bash bench/tail-copies.sh
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
[ -x "$M" ] || { echo "no $M: make memplan first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| net | share | planner | time | compute ends | tail | overhead | without the tail | last copy |"
echo "|---|---|---|---|---|---|---|---|---|"
for net in resnet50-b32 resnet152-b32 vgg16-b64 unet densenet121-b32 gpt2-small bert-base; do
	for p in 70 50 33; do
		for mode in auto greedy; do
			args="--budget $p%"
			[ $mode = greedy ] && args="$args --planner greedy --workspace none"
			if ! $M plan "examples/$net.json" $args --format json -o "$out/plan.json" > "$out/report.json" 2> /dev/null; then
				echo "| $net | $p% | $mode | - | | | | | |"
				continue
			fi
			# the report's time and tail; the plan file's schedule for the
			# copy that ends last
			jq -r --arg net "$net" --arg p "$p%" --arg mode "$mode" --slurpfile R "$out/report.json" '
				$R[0] as $P
				| ($P.time_ms - $P.tail_ms) as $ce
				| ([.schedule[] | select(.stream != "compute")] | max_by(.end_ms)) as $c
				| def fixed(x; d): (x * d | round) as $n | ($n | fabs) as $a
				      | (if $n < 0 then "-" else "" end) + (($a / d | floor) | tostring) + "."
				      + (($a % d) + d | tostring | .[1:]);
				  def two(x): fixed(x; 100);
				  def pct(x): ((x / $P.baseline_time_ms - 1) * 1000 | round) as $t
				      | (if $t > 0 then "+" else "" end) + fixed($t / 1000 * 100; 10) + "%";
				  "| \($net) | \($p) | \($mode) | \(two($P.time_ms)) ms | \(two($ce)) ms | "
				+ "\(two($P.tail_ms)) ms | \(pct($P.time_ms)) | \(pct($ce)) | "
				+ (if $c == null then "none" else "\($c.action) \($c.tensor), ends \(two($c.end_ms)) ms" end) + " |"
			' "$out/plan.json"
		done
	done
done
