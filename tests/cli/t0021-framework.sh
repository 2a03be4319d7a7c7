#!/bin/sh
# "framework": "pytorch" (memplan-net(5), "FRAMEWORK"): layers save what
# PyTorch's autograd saves.  tests/data/framework.json by hand, float32, sgd,
# no times: x.out 512 B; c (conv 4x1x3x3: 144 B) writes c.out 2048 B, which
# r (relu6) updates in place; p (max pool) 512 B; a (avg pool 2x2) 128 B;
# g (global avg pool) 32 B; f (fc 3x4: 48 B) 24 B; loss 8 B; 192 B of
# parameters live throughout.
#   cudnn:   r saves its output, p its input and output, a and g nothing:
#            the peak is r.bwd, 6896 B.
#   pytorch: r saves a copy of its input (autograd's clone): lowered out of
#            place, c.out holds what the clone holds and r.out (2048 B) the
#            updated values; p saves its input and int64 indices (p.indices,
#            16 * 8 * 8 = 1024 B), a its input (p.out), g nothing (a mean).
#            The forward ends at 192 + 512 + 2048 + 2048 + 1024 + 512 + 32 +
#            24 + 8 = 6400 B, and 24 B more inside loss.fwd (log_softmax's
#            output beside the logits, its workspace): 6424 B; the peak is p.bwd: c.out, r.out, p.indices,
#            p.out, p.dout 512 B and the r.dout it writes 2048 B, with x.out
#            and the parameters: 8432 B.
. "$(dirname "$0")/../lib.sh"
pt() { sed 's/"optimizer": "sgd",/"optimizer": "sgd", "framework": "pytorch",/' tests/data/framework.json; }
pt >"$TMP/pt.json"
sed 's/"optimizer": "sgd",/"optimizer": "sgd", "framework": "cudnn",/' tests/data/framework.json >"$TMP/cudnn.json"
expect_run "cudnn (absent): peak" 0 --stdout-grep '"peak_bytes": 6896' -- \
	memplan analyze tests/data/framework.json --strategy liveness --format json
expect_run "cudnn (given): peak" 0 --stdout-grep '"peak_bytes": 6896' -- \
	memplan analyze "$TMP/cudnn.json" --strategy liveness --format json
expect_run "pytorch: peak at p.bwd" 0 --stdout-grep '"peak_op": "p\.bwd"' -- \
	memplan analyze "$TMP/pt.json" --strategy liveness --format json
expect_run "pytorch: peak" 0 --stdout-grep '"peak_bytes": 8432' -- \
	memplan analyze "$TMP/pt.json" --strategy liveness --format json
expect_run "pytorch: the forward ends at 6424 B" 0 --stdout-grep '^8,forward,loss\.fwd,6424,' -- \
	memplan analyze "$TMP/pt.json" --strategy liveness --steps --format csv
expect_run "pytorch: check says so" 0 --stdout-grep "valid memplan-net/1 'framework' \(float32, optimizer sgd, framework pytorch\)" -- \
	memplan check "$TMP/pt.json"
expect_run "pytorch: check json" 0 --stdout-grep '"framework": "pytorch",' -- \
	memplan check "$TMP/pt.json" --format json
# an in-place layer that saves its input is refused under cudnn, a copy under pytorch
sed 's/"type": "relu6"/"type": "gelu"/' tests/data/framework.json >"$TMP/gelu.json"
expect_run "cudnn: in-place gelu refused" 2 --stderr "memplan: $TMP/gelu.json: layers[2].inplace: 'r' saves its input for backward, which updating it in place destroys (\"framework\": \"pytorch\" saves a copy)" -- \
	memplan check "$TMP/gelu.json"
pt | sed 's/"type": "relu6"/"type": "gelu"/' >"$TMP/gelu-pt.json"
expect_run "pytorch: in-place gelu saves a copy" 0 --stdout-grep '"peak_bytes": 8432' -- \
	memplan analyze "$TMP/gelu-pt.json" --strategy liveness --format json
# plans and verify follow the same lowering: the plan's peak is what the host measures
expect_run "pytorch: plan at 90% of liveness" 0 -- memplan plan "$TMP/pt.json" --budget 7589 -o "$TMP/p.json"
expect_run "pytorch: verify, exact" 0 --stdout-grep 'nothing lost' -- \
	memplan verify "$TMP/p.json" --iters 2 --warmup 1 --tolerance-peak 0
# gen --framework: written only when given (the tensors each layer saves:
# test_zoo's test_framework; the peaks against PyTorch's: t0800-torch.sh)
memplan gen mobilenet-v2 --batch 2 --image 64x64 -o "$TMP/m.json" >/dev/null
memplan gen mobilenet-v2 --batch 2 --image 64x64 --framework pytorch -o "$TMP/m-pt.json" >/dev/null
memplan gen resnet18 --batch 2 --image 64x64 --framework pytorch -o "$TMP/r-pt.json" >/dev/null
expect_run "gen without --framework writes no key" 1 -- grep -q '"framework"' "$TMP/m.json"
expect_run "gen --framework pytorch writes the key" 0 -- grep -q '"framework": "pytorch"' "$TMP/m-pt.json"
expect_run "gen: mobilenet-v2 uses relu6" 0 -- grep -q '"name": "stem.relu6", "type": "relu6"' "$TMP/m.json"
expect_run "gen pytorch: check says so" 0 --stdout-grep "framework pytorch\)" -- memplan check "$TMP/r-pt.json"
# in-place layers are lowered out of place before any in-place check, so the
# order of the file does not matter (d reads g, listed after it)
cat >"$TMP/order.json" <<'EOF2'
{"format": "memplan-net/1", "name": "order", "framework": "pytorch",
 "layers": [
  {"name": "x", "type": "data", "shape": [2, 8]},
  {"name": "c", "type": "fc", "inputs": ["x"], "shape": [2, 8], "params": [[8, 8]]},
  {"name": "d", "type": "dropout", "inputs": ["g"], "shape": [2, 8], "inplace": true},
  {"name": "g", "type": "gelu", "inputs": ["c"], "shape": [2, 8], "inplace": true},
  {"name": "loss", "type": "loss", "inputs": ["d"], "shape": [2]}]}
EOF2
expect_run "pytorch: in-place layers in any file order" 0 --stdout-grep "valid memplan-net/1 'order'" -- \
	memplan check "$TMP/order.json"
# every planner's plans of PyTorch-lowered nets verify on the host, exact
verified=0
for m in mobilenet-v2 resnet18; do
	memplan gen $m --batch 2 --image 64x64 --framework pytorch -o "$TMP/$m.json" >/dev/null
	peak=$("$MEMPLAN" analyze "$TMP/$m.json" --strategy liveness --format json | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | head -n 1)
	for f in 70 60 50; do
		for p in greedy chain chen checkpoint-blocks superneurons tf-swap tensile; do
			"$MEMPLAN" plan "$TMP/$m.json" --budget $((peak * f / 100)) --planner $p -o "$TMP/p.json" >/dev/null 2>&1
			rc=$?
			[ $rc = 1 ] && continue # does not fit
			expect_run "$m at $f%, $p: plan" 0 -- test $rc = 0
			expect_run "$m at $f%, $p: verify" 0 --stdout-grep 'nothing lost' -- \
				memplan verify "$TMP/p.json" --iters 2 --warmup 1 --tolerance-peak 0
			verified=$((verified + 1))
		done
	done
done
expect_run "pytorch: at least 8 plans verified ($verified)" 0 -- test "$verified" -ge 8
# a view writes nothing (memplan-net(5), reshape): a max pool re-run for its
# indices leaves its output as the flatten after it hands it on
# (tests/data/view-after-pool.json: the speed-centric head segment re-runs
# p for p.indices, then f1, r1 and f2, 1.2 ms; when the view counted as a
# writer, f1's rebuild read p's version where its first run read v's, an
# internal error)
expect_run "view after a re-run pool: recompute" 0 --stdout-grep "^recompute: .* 4 extra forward ops \(1.200 ms\), 1 speed-centric and 0 memory-centric segments$" -- \
	memplan analyze tests/data/view-after-pool.json --strategy recompute
expect_run "view after a re-run pool: superneurons plan" 0 --stdout-grep "^planner +superneurons: checkpoint offload \+ cost-aware recomputation" -- \
	memplan plan tests/data/view-after-pool.json --budget 400K --planner superneurons -o "$TMP/v.json"
expect_run "view after a re-run pool: verify" 0 --stdout-grep 'nothing lost' -- \
	memplan verify "$TMP/v.json" --iters 2 --warmup 1 --tolerance-peak 0
expect_run "view after a re-run pool: capacity" 0 --stdout-grep "^superneurons +[0-9]+ " -- \
	memplan capacity tests/data/view-after-pool.json --gpu k40c
# every zoo model as PyTorch builds it analyzes under every strategy
for m in alexnet vgg16 vgg19 resnet50 inception-v4 densenet-121 unet mobilenet-v2 gpt2 bert llama seq2seq; do
	rm -f "$TMP/zoo.json"
	expect_run "pytorch $m: gen" 0 -- memplan gen $m --framework pytorch -o "$TMP/zoo.json"
	expect_run "pytorch $m: analyze" 0 --stdout-grep "^recompute " -- memplan analyze "$TMP/zoo.json"
done
expect_run "gen --framework bad" 2 --stderr "memplan: gen: --framework: expected cudnn or pytorch, got 'jax'" -- \
	memplan gen resnet18 --framework jax
done_testing
