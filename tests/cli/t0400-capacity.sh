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
# explicit tensors with a top-level batch: x and y (per_sample) grow with
# it, w and z do not: 1000 + 16 b + 16 b + 64 B, 2 ms at batch 4
expect_run "per-sample tensors by hand: 1384 B holds batch 10" 0 --stdout-grep "^liveness +10 +5.000 " -- \
	memplan capacity tests/data/per-sample.json --gpu 1384 --reserve 0 --planner none
expect_run "per-sample tensors by hand: 1383 B holds batch 9" 0 --stdout-grep "^liveness +9 +4.500 " -- \
	memplan capacity tests/data/per-sample.json --gpu 1383 --reserve 0 --planner none
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

# --vary seq and tokens: a small GPT-2 regenerated at each seq, batch 2, on
# 2 GiB with no reserve (usable 2147483648): liveness fits seq 2244, and
# the nets gen writes at seq 2244 and 2245 peak on either side of it
gpt="--model gpt2 --depth 2 --hidden 256 --heads 4 --batch 2"
usable=2147483648
peak() { memplan analyze "$1" --strategy liveness --format json | sed -n 's/.*"peak_bytes": \([0-9]*\),.*/\1/p' | head -n 1; }
expect_run "seq" 0 --stdout-grep "^liveness +2244 " -- \
	memplan capacity $gpt --vary seq --gpu 2G --reserve 0 --planner none
expect_run "seq header" 0 --stdout-grep "^strategy +max seq +time ms" -- \
	memplan capacity $gpt --vary seq --gpu 2G --reserve 0 --planner none
expect_run "tokens: batch x seq" 0 --stdout-grep "^liveness +4488  +2 +2244 " -- \
	memplan capacity $gpt --vary tokens --gpu 2G --reserve 0 --planner none
expect_run "tokens json" 0 --stdout-grep '"max": 4488,' -- \
	memplan capacity $gpt --vary tokens --gpu 2G --reserve 0 --planner none --format json
expect_run "tokens json batch and seq" 0 --stdout-grep '"seq": 2244,' -- \
	memplan capacity $gpt --vary tokens --gpu 2G --reserve 0 --planner none --format json
expect_run "vary in json" 0 --stdout-grep '"vary": "tokens",' -- \
	memplan capacity $gpt --vary tokens --gpu 2G --reserve 0 --planner none --format json
for s in 2244 2245; do
	memplan gen gpt2 --depth 2 --hidden 256 --heads 4 --batch 2 --seq $s -o "$TMP/gpt-$s.json"
done
expect_run "seq 2244 fits" 0 -- test "$(peak "$TMP/gpt-2244.json")" -le $usable
expect_run "seq 2245 does not" 0 -- test "$(peak "$TMP/gpt-2245.json")" -gt $usable
# a net gen wrote, regenerated with its options kept: bf16-mixed without
# master weights, kept grads and PyTorch's saved tensors fit seq 3067 (cross_entropy's log_softmax output
# and its gradient beside the logits: memplan-net(5) FRAMEWORK)
opts="--depth 2 --hidden 256 --heads 4 --batch 2 --precision bf16-mixed,master=none --grads keep --framework pytorch"
memplan gen gpt2 $opts --seq 64 -o "$TMP/gpt-bf16.json"
expect_run "seq from a gen net" 0 --stdout-grep "^liveness +3067 " -- \
	memplan capacity "$TMP/gpt-bf16.json" --vary seq --gpu 2G --reserve 0 --planner none
for s in 3067 3068; do memplan gen gpt2 $opts --seq $s -o "$TMP/gpt-bf16-$s.json"; done
expect_run "its seq 3067 fits" 0 -- test "$(peak "$TMP/gpt-bf16-3067.json")" -le $usable
expect_run "its seq 3068 does not" 0 -- test "$(peak "$TMP/gpt-bf16-3068.json")" -gt $usable
expect_run "seq2seq stops at its longest" 0 --stdout-grep "^\+: the search's limit \(seq 2048, the longest the model builds\)" -- \
	memplan capacity --model seq2seq --depth 1 --hidden 64 --batch 1 --vary seq --gpu 80G --planner none
expect_run "not even seq 1" 0 --stdout-grep "^liveness +none " -- \
	memplan capacity $gpt --vary seq --gpu 1K --reserve 0 --planner none

# bad usage
expect_run "no gpu" 2 --stderr "memplan: capacity: --gpu is required (a catalog name such as k40c, or a size such as 12G)" -- \
	memplan capacity tests/data/mlp.json
expect_run "bad gpu" 2 --stderr "memplan: --gpu: 'k41' is neither a catalog GPU (see 'memplan devices') nor a memory size" -- \
	memplan capacity tests/data/mlp.json --gpu k41
expect_run "depth needs a model" 2 --stderr-grep "only for --model resnet" -- \
	memplan capacity tests/data/mlp.json --gpu 4M --vary depth
expect_run "seq needs a generator" 2 --stderr "memplan: examples/tiny.json: --vary seq: the net has no \"generator\" (only a net that memplan gen wrote can be regenerated at each sequence length)" -- \
	memplan capacity examples/tiny.json --gpu 4M --vary seq
expect_run "tokens needs a generator" 2 --stderr "memplan: tests/data/mlp.json: --vary tokens: the net has no \"generator\" (only a net that memplan gen wrote can be regenerated at each sequence length)" -- \
	memplan capacity tests/data/mlp.json --gpu 4M --vary tokens
expect_run "seq needs a model with one" 2 --stderr "memplan: --vary seq: 'resnet' has no sequence length (models with one: gpt2, bert, llama, seq2seq)" -- \
	memplan capacity --model resnet --gpu 4M --vary seq
memplan gen alexnet --batch 1 -o "$TMP/alexnet.json"
expect_run "a gen net without a seq" 2 --stderr "memplan: $TMP/alexnet.json: --vary seq: its model 'alexnet' has no sequence length (models with one: gpt2, bert, llama, seq2seq)" -- \
	memplan capacity "$TMP/alexnet.json" --gpu 4M --vary seq
sed 's/"seq": 64,/"seq": 65,/' "$TMP/gpt-bf16.json" > "$TMP/gpt-edited.json"
expect_run "an edited gen net" 2 --stderr-grep "--vary seq: description differs from what its \"generator\" gives" -- \
	memplan capacity "$TMP/gpt-edited.json" --gpu 4M --vary seq
expect_run "seq is what is varied" 2 --stderr "memplan: --seq: not with --vary seq (the seq is what is varied)" -- \
	memplan capacity $gpt --seq 64 --gpu 4M --vary seq
expect_run "model options need a model" 2 --stderr "memplan: --hidden: only with --model (a net file fixes it)" -- \
	memplan capacity tests/data/mlp.json --gpu 4M --hidden 64
expect_run "no batch to vary" 2 --stderr "memplan: examples/swap-chain.json: the net has no batch to vary (no data layer with a shape)" -- \
	memplan capacity examples/swap-chain.json --gpu 4M
expect_run "bad overhead" 2 --stderr "memplan: --max-overhead: 'lots' is not a percentage (for example 10 or 10%)" -- \
	memplan capacity tests/data/mlp.json --gpu 4M --max-overhead lots
# "--gpu ," names no GPU: refused, and no SVG is started (it crashed)
expect_run "empty gpu list" 2 --stderr "memplan: --gpu: ',' names no GPU (a catalog name such as k40c, or a size such as 12G, comma-separated)" -- \
	memplan capacity examples/tiny.json --gpu , --svg "$TMP/none.svg"
expect_run "empty gpu list wrote nothing" 1 -- test -e "$TMP/none.svg"
# --copies: copies of tests/data/job-a.json as jobs started together.  n
# copies in lockstep hold every x (1000 B) until their a2s run, and the last
# a2 holds one x and every y (2000 B): a liveness peak of 2000 n + 1000, so
# 9 fit in 20000 B (19000) and 10 do not; the baseline keeps every tensor,
# 3010 n: 6 fit (18060)
expect_run "copies: liveness 9" 0 --stdout-grep "^liveness +9 " -- \
	memplan capacity tests/data/job-a.json --gpu 20000 --reserve 0 --copies --planner none
expect_run "copies: baseline 6" 0 --stdout-grep "^baseline +6 " -- \
	memplan capacity tests/data/job-a.json --gpu 20000 --reserve 0 --copies --planner none
expect_run "copies: a swapping planner reaches the limit" 0 --stdout-grep "^greedy +32\+ " -- \
	memplan capacity tests/data/job-a.json --gpu 20000 --reserve 0 --copies --planner greedy
expect_run "copies: json" 0 --stdout-grep '"vary": "copies"' -- \
	memplan capacity tests/data/job-a.json --gpu 20000 --reserve 0 --copies --planner none --format json
expect_run "copies: not with --model" 2 --stderr "memplan: --copies: only with a net file (the job to copy)" -- \
	memplan capacity --model resnet --gpu k40c --copies
expect_run "copies: not with --vary seq" 2 \
	--stderr "memplan: --copies: not with --vary seq (the number of copies is what is varied)" -- \
	memplan capacity examples/gpt2-small.json --gpu k40c --vary seq --copies
done_testing
