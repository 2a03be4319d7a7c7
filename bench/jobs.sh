#!/bin/bash
# Several jobs on one GPU (TENSILE Fig. 6): the global peak and each job's
# overhead for 1 to 4 jobs of ResNet-50 (examples/resnet50-b32.json), of
# VGG-16 (examples/vgg16-b64.json) and of the two alternating (R, V, R, V),
# at the worst offsets memplan finds, under two budgets:
#   scaled  1.5 x one job's liveness peak (the first job's: ResNet-50's for
#           the ResNet and mixed series, VGG-16's for the VGG series)
#   device  the v100-16g of the nets, its memory less the 512 MiB reserve
#           (no --budget: 15.3 GiB)
# Each row: the jobs' global liveness peak (greedy with no budget pressure,
# --workspace none), then the auto plan under the budget: its peak, whether
# it fits, the planner auto chose, the whole run's time, MSR/EOR/CBR, and
# each job's overhead against the same planner's plan for it alone.
# Usage: bash bench/jobs.sh > table.md   (about a minute)
set -u
cd "$(dirname "$0")/.."
M=${MEMPLAN:-./memplan}
R=examples/resnet50-b32.json
V=examples/vgg16-b64.json

gib() { python3 -c "import sys; print('%.2f' % (int(sys.argv[1]) / 2**30))" "$1"; }
live_one() { $M analyze "$1" --strategy liveness --format json | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | tail -n 1; }

# row SERIES BUDGET_NAME BUDGET_ARGS NETS...
row() {
	local series=$1 bname=$2 bargs=$3
	shift 3
	local n=$# live json
	live=$($M plan "$@" --budget 1T --planner greedy --workspace none --format json |
		sed -n 's/^  "peak_bytes": \([0-9]*\),/\1/p')
	json=$($M plan "$@" $bargs --format json 2>/dev/null)
	python3 - "$series" "$bname" "$n" "$live" "$json" <<'EOF'
import json, sys
series, bname, n, live, text = sys.argv[1:6]
if not text.strip():
    print("| %s | %s | %s | %.2f | - | no (below the layer-wise minimum) | - | - | - | - |" %
          (series, n, bname, int(live) / 2**30))
    sys.exit(0)
p = json.loads(text)
jobs = p.get("jobs", [])
if jobs:
    over = ", ".join("%s %+.0f%%" % (j["name"], 100 * j["overhead"]) for j in jobs)
    offs = ", ".join("%.1f" % j["offset_ms"] for j in jobs)
else:
    over, offs = "-", "0"
print("| %s | %s | %s (%.2f) | %.2f | %.2f | %s | %s | %.1f | %.3f / %.3f / %.3f | %s | %s |" % (
    series, n, bname, p["budget_bytes"] / 2**30, int(live) / 2**30, p["peak_bytes"] / 2**30,
    "yes" if p["fits"] else "no", p["planner"], p["time_ms"], p["msr"], p["eor"], p["cbr"], offs, over))
EOF
}

echo "| jobs | n | budget GiB | liveness peak GiB | planned peak GiB | fits | planner | run ms | MSR / EOR / CBR | offsets ms | overhead per job |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for series in resnet50 vgg16 mixed; do
	case $series in
	resnet50) first=$R ;;
	vgg16) first=$V ;;
	mixed) first=$R ;;
	esac
	scaled=$(( $(live_one "$first") * 3 / 2 ))
	for n in 1 2 3 4; do
		nets=""
		for i in $(seq 1 "$n"); do
			case $series in
			resnet50) nets="$nets $R" ;;
			vgg16) nets="$nets $V" ;;
			mixed) if [ $((i % 2)) = 1 ]; then nets="$nets $R"; else nets="$nets $V"; fi ;;
			esac
		done
		[ "$series" = mixed ] && [ "$n" = 1 ] && continue
		# shellcheck disable=SC2086
		row "$series" scaled "--budget $scaled" $nets
		# shellcheck disable=SC2086
		row "$series" device "" $nets
	done
done
