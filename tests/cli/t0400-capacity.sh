#!/bin/sh
# memplan capacity: answers computed by hand on tests/data/mlp.json (its
# description: liveness peaks at P + 4096 N, the baseline holds 2P + 5120 N,
# P = 262144), the "N fits, N + 1 does not" property through memplan itself,
# generated models, several GPUs, bad usage.
. "$(dirname "$0")/../lib.sh"

# 4 MiB, no reserve: baseline (4194304 - 524288) / 5120 = 716.8 -> 716;
# liveness (4194304 - 262144) / 4096 = 960 exactly
expect_run "mlp baseline by hand" 0 --stdout-grep "^baseline +716 " -- \
	memplan capacity tests/data/mlp.json --gpu 4M --reserve 0
expect_run "mlp liveness by hand" 0 --stdout-grep "^liveness +960 " -- \
	memplan capacity tests/data/mlp.json --gpu 4M --reserve 0
# the same with the default 512 MiB reserve on a 516 MiB GPU
expect_run "reserve" 0 --stdout-grep "^liveness +960 " -- \
	memplan capacity tests/data/mlp.json --gpu 516M
expect_run "json" 0 --stdout-grep '"name": "liveness",' -- \
	memplan capacity tests/data/mlp.json --gpu 4M --reserve 0 --format json
expect_run "too small for anything" 0 --stdout-grep "^liveness +none" -- \
	memplan capacity tests/data/mlp.json --gpu 100K --reserve 0

# N fits and N + 1 does not, checked by analyze on the net at those batches
cat > "$TMP/mk.awk" <<'AWK'
{ gsub(/\[8, 256\]/, "[" n ", 256]"); print }
AWK
for n in 716 717; do awk -v n=$n -f "$TMP/mk.awk" tests/data/mlp.json > "$TMP/mlp-$n.json"; done
expect_run "716 fits the baseline" 0 --stdout-grep '"peak_bytes": 4190208,' -- \
	memplan analyze "$TMP/mlp-716.json" --strategy baseline --format json
expect_run "717 does not" 0 --stdout-grep '"peak_bytes": 4195328,' -- \
	memplan analyze "$TMP/mlp-717.json" --strategy baseline --format json

# generated models, depth, several GPUs, a chart
expect_run "alexnet on two GPUs" 0 --stdout-grep "on v100-16g" -- \
	memplan capacity --model alexnet --gpu k40c,v100-16g --planner none
expect_run "resnet depth" 0 --stdout-grep "^liveness +[0-9]+ " -- \
	memplan capacity --model resnet --vary depth --batch 16 --gpu 6G --planner none
expect_run "max overhead" 0 --stdout-grep "slowdown stays within 10.0%" -- \
	memplan capacity tests/data/mlp.json --gpu 4M --reserve 0 --max-overhead 10
expect_run "svg" 0 -- memplan capacity tests/data/mlp.json --gpu 4M --reserve 0 --svg "$TMP/cap.svg"
expect_run "svg is a chart" 0 --stdout-grep "Throughput against batch" -- cat "$TMP/cap.svg"

# bad usage
expect_run "no gpu" 2 --stderr "memplan: capacity: --gpu is required (a catalog name such as k40c, or a size such as 12G)" -- \
	memplan capacity tests/data/mlp.json
expect_run "bad gpu" 2 --stderr "memplan: --gpu: 'k41' is neither a catalog GPU (see 'memplan devices') nor a memory size" -- \
	memplan capacity tests/data/mlp.json --gpu k41
expect_run "depth needs a model" 2 --stderr-grep "only for --model resnet" -- \
	memplan capacity tests/data/mlp.json --gpu 4M --vary depth
expect_run "no batch to vary" 2 --stderr "memplan: examples/swap-chain.json: the net has no batch to vary (no data layer with a shape)" -- \
	memplan capacity examples/swap-chain.json --gpu 4M
expect_run "bad overhead" 2 --stderr "memplan: --max-overhead: 'lots' is not a percentage (for example 10 or 10%)" -- \
	memplan capacity tests/data/mlp.json --gpu 4M --max-overhead lots
# "--gpu ," names no GPU: refused, and no SVG is started (it crashed)
expect_run "empty gpu list" 2 --stderr "memplan: --gpu: ',' names no GPU (a catalog name such as k40c, or a size such as 12G, comma-separated)" -- \
	memplan capacity examples/tiny.json --gpu , --svg "$TMP/none.svg"
expect_run "empty gpu list wrote nothing" 1 -- test -e "$TMP/none.svg"
done_testing
