#!/bin/sh
# gen llama: the presets' parameter counts (test_zoo checks every preset and
# LoRA's trainable counts), LoRA, eager attention, and issue 14's question
# read off capacity: llama3-8b, bf16-mixed, AdamW, LoRA r 16, seq 4096 on a
# 24 GB card: batch 1 with per-block checkpointing, none without.
. "$(dirname "$0")/../lib.sh"
memplan gen llama3-8b --seq 4096 --batch 1 --precision bf16-mixed --lora 16 -o "$TMP/l8.json" >/dev/null
expect_run "llama3-8b + LoRA r16 on q, v: 8030261248 + 6815744 parameters" 0 --stdout-grep '"parameters": 8037076992,' -- \
	memplan check "$TMP/l8.json" --format json
# trainable: 6815744 parameters, bf16 gradients, fp32 master and two moments
expect_run "LoRA: only the adapters train" 0 --stdout-grep '"parameter_gradient": 13631488,' -- \
	memplan check "$TMP/l8.json" --format json
expect_run "LoRA: their state" 0 --stdout-grep '"optimizer_state": 81788928,' -- \
	memplan check "$TMP/l8.json" --format json
memplan capacity "$TMP/l8.json" --gpu rtx-4090 --planner checkpoint-blocks >"$TMP/cap.out"
expect_run "24 GB: nothing fits without checkpointing" 0 --stdout-grep '^liveness +none ' -- cat "$TMP/cap.out"
expect_run "24 GB: batch 1 with per-block checkpointing" 0 --stdout-grep '^checkpoint-blocks +1 ' -- cat "$TMP/cap.out"
# QLoRA: llama2-7b's 32 x (4 x 4096^2 + 3 x 4096 x 11008) projection weights
# in NF4 (n / 2 codes, a float32 per 64, a 64-byte code book each), the
# embedding, head, norms and LoRA r16 q, v adapters in bf16: 4184365056 B;
# with double quantization (a byte per 64, a float32 per 256 x 64, a
# 4-byte offset) 3882384256 B
memplan gen llama2-7b --seq 512 --batch 1 --precision bf16-mixed --lora 16 --quant nf4 -o "$TMP/q.json" >/dev/null
expect_run "QLoRA nf4: the 4-bit base by hand" 0 --stdout-grep '"parameter": 4184365056,' -- \
	memplan check "$TMP/q.json" --format json
expect_run "QLoRA nf4: parameters still counted" 0 --stdout-grep '"parameters": 6746804224,' -- \
	memplan check "$TMP/q.json" --format json
memplan gen llama2-7b --seq 512 --batch 1 --precision bf16-mixed --lora 16 --quant nf4-dq -o "$TMP/qdq.json" >/dev/null
expect_run "QLoRA nf4-dq by hand" 0 --stdout-grep '"parameter": 3882384256,' -- \
	memplan check "$TMP/qdq.json" --format json
expect_run "QLoRA: the generator says so" 0 --stdout-grep '"quant": "nf4-dq"' -- cat "$TMP/qdq.json"
expect_run "a 4-bit base needs LoRA" 2 --stderr "memplan: gen: llama: a 4-bit base (--quant) is frozen: it needs --lora (QLoRA)" -- \
	memplan gen llama --quant nf4
expect_run "quantizations" 2 --stderr "memplan: gen: --quant: expected none, nf4 or nf4-dq, got 'int4'" -- \
	memplan gen llama --lora 8 --quant int4
small="--depth 2 --hidden 256 --heads 8 --kv-heads 2 --ffn 512 --vocab 1000"
memplan gen llama $small --seq 256 --batch 2 --attn eager -o "$TMP/eager.json" >/dev/null
memplan gen llama $small --seq 256 --batch 2 -o "$TMP/flash.json" >/dev/null
expect_run "eager attention says so" 0 -- grep -q '"impl": "eager"' "$TMP/eager.json"
peak() { "$MEMPLAN" analyze "$1" --strategy liveness --format json | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | head -n 1; }
expect_run "eager attention keeps more than flash" 0 -- test "$(peak "$TMP/eager.json")" -gt "$(peak "$TMP/flash.json")"
# plans of a LoRA net verify on the host with nothing lost
memplan gen llama $small --seq 64 --batch 2 --precision bf16-mixed --lora 8,all -o "$TMP/t.json" >/dev/null
p=$(peak "$TMP/t.json")
for planner in greedy checkpoint-blocks tensile; do
	"$MEMPLAN" plan "$TMP/t.json" --budget $((p * 9 / 10)) --planner $planner -o "$TMP/p.json" >/dev/null 2>&1
	rc=$?
	[ $rc = 1 ] && continue
	expect_run "LoRA, $planner: plan" 0 -- test $rc = 0
	expect_run "LoRA, $planner: verify" 0 --stdout-grep 'nothing lost' -- \
		memplan verify "$TMP/p.json" --iters 2 --warmup 1 --tolerance-peak 0
done
# a QLoRA net's plans verify on the host too (its 4-bit layers timed)
memplan gen llama $small --seq 64 --batch 2 --precision bf16-mixed --lora 8 --quant nf4 -o "$TMP/tq.json" >/dev/null
p=$(peak "$TMP/tq.json")
expect_run "QLoRA: plan" 0 -- memplan plan "$TMP/tq.json" --budget $((p * 9 / 10)) --planner greedy -o "$TMP/pq.json"
expect_run "QLoRA: verify" 0 --stdout-grep 'nothing lost' -- \
	memplan verify "$TMP/pq.json" --iters 2 --warmup 1 --tolerance-peak 0
# capacity --vary seq regenerates a gen'd llama with every option it was made
# with (eager attention, LoRA on all projections over a 4-bit base,
# bf16-mixed): N fits, N+1 not
opts="--batch 2 --attn eager --lora 8,all --quant nf4-dq --precision bf16-mixed"
memplan gen llama $small --seq 64 $opts -o "$TMP/v.json" >/dev/null
n=$("$MEMPLAN" capacity "$TMP/v.json" --vary seq --gpu 256M --reserve 0 --planner none | sed -n 's/^liveness *\([0-9]*\) .*/\1/p')
memplan gen llama $small --seq "$n" $opts -o "$TMP/n.json" >/dev/null
memplan gen llama $small --seq $((n + 1)) $opts -o "$TMP/n1.json" >/dev/null
expect_run "llama --vary seq: $n fits 256 MiB" 0 -- test "$(peak "$TMP/n.json")" -le 268435456
expect_run "llama --vary seq: $((n + 1)) does not" 0 -- test "$(peak "$TMP/n1.json")" -gt 268435456
expect_run "a preset fixes its shape" 2 --stderr "memplan: gen: 'llama3-8b' fixes --kv-heads; use 'llama --kv-heads'" -- \
	memplan gen llama3-8b --kv-heads 4
expect_run "kv-heads divide heads" 2 --stderr "memplan: gen: llama: heads 32 is not a multiple of kv-heads 5" -- \
	memplan gen llama --heads 32 --kv-heads 5
expect_run "LoRA targets" 2 --stderr "memplan: gen: --lora: targets are q, k, v, o, gate, up, down or all, got 'x'" -- \
	memplan gen llama --lora 16,x
expect_run "attention implementations" 2 --stderr "memplan: gen: --attn: expected flash, sdpa or eager, got 'slow'" -- \
	memplan gen llama --attn slow
expect_run "LoRA is llama's" 2 --stderr "memplan: gen: --tied, --attn, --lora or --quant does not apply to gpt2" -- \
	memplan gen gpt2 --lora 8
done_testing
