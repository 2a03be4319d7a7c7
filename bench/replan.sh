#!/bin/sh
# Re-planning from measured op times (memplan replan, verify --adapt;
# TENSILE IV-E): a plan made on op times half the true ones runs at the true
# times on the host backend (verify --op-times, virtual clock: exact and the
# same on any host) and re-plans after every iteration.  Per round: the
# planner, the predicted iteration time and the measured one (the engines'
# timeline), the predicted and measured stall, and what re-planning changed.
# Cases: examples/swap-chain-stall.json (tensile under 10K, greedy under 11K)
# and examples/resnet50-b32.json (tensile under 1.4G; about 20 s of hashing
# per round on a 2-CPU VM).  Writes markdown on stdout.
# Usage: sh bench/replan.sh [ROUNDS] [ALPHA]   (make memplan first; minutes)
#   THRESHOLD=PCT: re-plan only where the op times moved more than PCT
#   percent (verify --adapt-threshold, TENSILE's trigger)
cd "$(dirname "$0")/.." || exit 2
M=${MEMPLAN:-./memplan}
ROUNDS=${1:-8}
ALPHA=${2:-0.3}
TH=${THRESHOLD:+ --adapt-threshold $THRESHOLD}
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT

# half NET OUT: NET with every op and algorithm time halved
half() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
src, dst = sys.argv[1:]
net = json.load(open(src))
def half(t):
    return {k: v * 0.5 for k, v in t.items()} if isinstance(t, dict) else t * 0.5
for item in net.get("layers", []) + net.get("ops", []):
    for x in [item] + item.get("algos", []):
        if "time" in x:
            x["time"] = half(x["time"])
net["name"] += "-half"
json.dump(net, open(dst, "w"))
PY
}

# case NET PLANNER BUDGET ROUNDS
case_() {
	half "$1" "$T/half.json" || exit 1
	$M plan "$T/half.json" --planner "$2" --budget "$3" -o "$T/p0.json" >/dev/null || exit 1
	echo
	echo "### $(basename "$1" .json), $2, budget $3, alpha $ALPHA${THRESHOLD:+, threshold $THRESHOLD%}"
	echo
	echo "    memplan plan HALF.json --planner $2 --budget $3 -o p0.json"
	echo "    memplan verify p0.json --op-times $1 --warmup 0 --iters $4 --adapt 1 --alpha $ALPHA$TH"
	echo
	echo "| round | planner | predicted ms | measured ms | error | predicted stall ms | measured stall ms | re-plan for the next round |"
	echo "|---:|---|---:|---:|---:|---:|---:|---|"
	$M verify "$T/p0.json" --op-times "$1" --warmup 0 --iters "$4" --adapt 1 --alpha "$ALPHA"$TH >"$T/out" || exit 1
	awk '$1 ~ /^[0-9]+$/ && NF >= 8 {
		ch = ""; for (i = 9; i <= NF; i++) ch = ch (i > 9 ? " " : "") $i
		printf "| %s | %s | %s | %s | %+.1f%% | %s | %s | %s |\n", $1, $2, $3, $4, 100 * ($3 / $4 - 1), $5, $6, ch == "" ? "(last)" : ch
	}' "$T/out"
}

echo "memplan $(git rev-parse --short HEAD 2>/dev/null), $(date -u +%Y-%m-%d)"
case_ examples/swap-chain-stall.json tensile 10K "$ROUNDS"
case_ examples/swap-chain-stall.json greedy 11K "$ROUNDS"
case_ examples/resnet50-b32.json tensile 1.4G "${R50_ROUNDS:-6}"
