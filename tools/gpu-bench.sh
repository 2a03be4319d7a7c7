#!/bin/sh
# The GPU check of issue 5 in one call, for a machine with a GPU and no
# package registry: measure (memplan profile), plan at three budgets, run each
# plan on the GPU (memplan verify --device cuda) and tabulate predicted
# against measured peak, time and link bandwidth (tools/verify-table.py).
#
# Build the bundle where the packages are (`make gpu-bundle`: memplan with the
# CUDA backend and the shared libraries it needs beside it, in build-gpu/),
# carry build-gpu to the GPU machine and run this from the repository root:
#     sh tools/gpu-bench.sh [OUTDIR]      # default $OUT, else gpu-out
# cuDNN and cuBLAS are found through LD_LIBRARY_PATH, or in a Python
# environment's nvidia-cudnn / nvidia-cublas packages (PyTorch's).
# Everything it prints and writes is a measurement of this machine; nothing
# is made up when a step fails (the step's output says why).  Exit 3 without
# a GPU.  MEMPLAN=FILE runs another memplan: tests/cli/t0604 runs the whole
# script with make's gpu-dry memplan against tests/fakecuda, where there is
# no GPU (NETS and PCTS choose the nets and budgets).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
M=${MEMPLAN:-"$top/build-gpu/memplan"}
out=${1:-${OUT:-gpu-out}}
mkdir -p "$out"
[ -x "$M" ] || { echo "gpu-bench: $M missing: run 'make gpu-bundle' first" >&2; exit 2; }
# cuDNN and cuBLAS inside a Python environment (pip's nvidia-* packages)
for mod in nvidia.cudnn nvidia.cublas; do
	d=$(python3 -c "import $mod, os; print(os.path.join(list($mod.__path__)[0], 'lib'))" 2>/dev/null) &&
		[ -d "$d" ] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >"$out/nvidia-smi.csv" 2>&1
"$M" verify --probe | tee "$out/probe.txt"
grep -q '^cuda .*device 0: ' "$out/probe.txt" || { echo "gpu-bench: no CUDA device" >&2; exit 3; }
NETS=${NETS:-"examples/alexnet.json examples/resnet50-b32.json examples/gpt2-small.json"}
PCTS=${PCTS:-"90 70 50"}
for net in $NETS; do
	n=$(basename "$net" .json)
	echo "== $n: profile"
	# (timed by the shell: a bare GPU image may have no /usr/bin/time)
	t0=$(date +%s.%N)
	"$M" profile "$top/$net" -o "$out/$n.measured.json" --iters 10 --warmup 3 2>&1 | tee "$out/$n.profile.txt"
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "profile %.2f s wall\n", b - a }' | tee -a "$out/$n.profile.txt"
	[ -s "$out/$n.measured.json" ] || continue
	lv=$("$M" analyze "$out/$n.measured.json" --format json |
		python3 -c "import json,sys; print([s for s in json.load(sys.stdin)['strategies'] if s['name'] == 'liveness'][0]['peak_bytes'])")
	for pct in $PCTS; do
		b=$((lv * pct / 100))
		echo "== $n at $pct% of liveness ($b B): plan, verify"
		"$M" plan "$out/$n.measured.json" --budget "$b" --workspace wr -o "$out/$n.$pct.plan.json" \
			>"$out/$n.$pct.plan.txt" 2>&1 || { tail -n 2 "$out/$n.$pct.plan.txt"; continue; }
		"$M" verify "$out/$n.$pct.plan.json" --device cuda --iters 10 --warmup 2 \
			--report "$out/$n.$pct.verify.json" >"$out/$n.$pct.verify.txt" 2>&1
		echo "verify exit $?"; tail -n 3 "$out/$n.$pct.verify.txt"
		"$M" verify "$out/$n.$pct.plan.json" --device cuda --compute timed --iters 10 --warmup 2 \
			--report "$out/$n.$pct.timed.json" >"$out/$n.$pct.timed.txt" 2>&1
	done
done
python3 "$top/tools/verify-table.py" "$out" | tee "$out/verify-table.md"
