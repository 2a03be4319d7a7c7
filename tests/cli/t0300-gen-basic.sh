#!/bin/sh
# memplan gen: what it writes loads, is the model asked for, and says its
# times are roofline estimates.
. "$(dirname "$0")/../lib.sh"
expect_run "gen help" 0 --stdout-grep "^  inception-v4 " -- memplan gen --help
expect_run "gen resnet50 stdout" 0 --stdout-grep '^ "time_source": "roofline:v100-16g",$' -- memplan gen resnet50
expect_run "gen resnet50 -o" 0 --stderr "" -- memplan gen resnet50 --batch 8 -o "$TMP/r50.json"
expect_run "check resnet50" 0 --stdout-grep '"parameters": 25557032,' -- memplan check "$TMP/r50.json" --format json
expect_run "check resnet50 layers" 0 --stdout-grep '"layers": 177,' -- memplan check "$TMP/r50.json" --format json
expect_run "gen vgg16 float16" 0 -- memplan gen vgg16 --batch 2 --dtype float16 -o "$TMP/vgg.json"
expect_run "check vgg16 float16" 0 --stdout-grep '"parameter_bytes": 276715088,' -- memplan check "$TMP/vgg.json" --format json
expect_run "gen gpt2 short" 0 -- memplan gen gpt2-small --seq 128 --batch 2 -o "$TMP/gpt2.json"
expect_run "check gpt2" 0 --stdout-grep '"parameters": 124439808,' -- memplan check "$TMP/gpt2.json" --format json
expect_run "gen resnet 2500" 0 --stderr "memplan: gen: note: depth 2500 is not 3*(6+32+n3+6)+2; generating depth 2498 (n3 = 788)" \
	-- memplan gen resnet --depth 2500 --batch 1 -o "$TMP/r2500.json"
expect_run "check resnet 2500" 0 --stdout-grep '"layers": 8337,' -- memplan check "$TMP/r2500.json" --format json
expect_run "gen h100 bf16" 0 -- memplan gen bert-base --device h100-sxm --dtype bf16 --optimizer sgd -o "$TMP/bert.json"
expect_run "check h100 bf16" 0 --stdout-grep '"time_source": "roofline:h100-sxm",' -- memplan check "$TMP/bert.json" --format json
expect_run "analyze h100 bf16" 0 --stdout-grep '^device: h100-sxm' -- memplan analyze "$TMP/bert.json"
cat >"$TMP/dev.json" <<'DEV'
{"name": "mygpu", "memory": "8G", "h2d_gbps": 6, "d2h_gbps": 6, "mem_gbps": 400, "tflops": {"float32": 8}}
DEV
expect_run "gen custom device" 0 -- memplan gen mobilenet-v2 --batch 4 --image 128x160 --device "$TMP/dev.json" -o "$TMP/mb.json"
expect_run "analyze custom device" 0 --stdout-grep '^device: mygpu, link 6.0 GB/s' -- memplan analyze "$TMP/mb.json"
expect_run "gen seq2seq" 0 -- memplan gen seq2seq --seq 8 --depth 1 --hidden 64 --batch 2 -o "$TMP/s2s.json"
expect_run "analyze seq2seq" 0 --stdout-grep '^recompute ' -- memplan analyze "$TMP/s2s.json"
# -o writes a whole file or nothing (a temporary file beside it, renamed):
# over an old file, through a link (the link stays), into a pipe
memplan gen vgg16 --batch 2 >"$TMP/vgg2.json"
echo old >"$TMP/old.json"
expect_run "gen -o replaces a file" 0 -- sh -c "'$MEMPLAN' gen vgg16 --batch 2 -o '$TMP/old.json' && cmp -s '$TMP/old.json' '$TMP/vgg2.json'"
echo old >"$TMP/target.json"; ln -s target.json "$TMP/link.json"
expect_run "gen -o through a link" 0 -- sh -c "'$MEMPLAN' gen vgg16 --batch 2 -o '$TMP/link.json' && test -L '$TMP/link.json' && cmp -s '$TMP/target.json' '$TMP/vgg2.json'"
expect_run "gen -o into a pipe" 0 -- sh -c "'$MEMPLAN' gen vgg16 --batch 2 -o /dev/stdout | cmp -s - '$TMP/vgg2.json'"
expect_run "gen -o leaves no temporary file" 1 -- sh -c "ls '$TMP' | grep '\\.json\\.'"
# --grads: the net's "grads" key, written only when given; keep holds the
# parameter gradients from the first step on (memplan-net(5))
memplan gen alexnet --batch 8 -o "$TMP/a-none.json" >/dev/null
memplan gen alexnet --batch 8 --grads keep -o "$TMP/a-keep.json" >/dev/null
expect_run "gen without --grads writes no key" 1 -- grep -q '"grads"' "$TMP/a-none.json"
expect_run "gen --grads keep" 0 --stdout-grep "^ +1 forward +data\.fwd +.*" -- \
	sh -c "grep -q '\"grads\": \"keep\"' '$TMP/a-keep.json' && '$MEMPLAN' analyze '$TMP/a-keep.json' --strategy liveness --steps"
expect_run "gen --grads keep adds an accumulate per layer with parameters" 0 --stdout-grep "^ +[0-9]+ backward +fc8\.accumulate " -- \
	memplan analyze "$TMP/a-keep.json" --strategy liveness --steps
# --precision: issue 14's 6.66 B-parameter GPT-2: bf16 parameters and
# gradients (12.4 GiB each), fp32 master weights and AdamW moments
# (3 * 4 * 6658404352 B); no batch fits on an 80 GB H100 without offload
memplan gen gpt2 --depth 32 --hidden 4096 --heads 32 --seq 2048 --batch 1 --precision bf16-mixed \
	--optimizer adamw --device h100-sxm -o "$TMP/g7b.json" >/dev/null
expect_run "gen --precision bf16-mixed: check" 0 --stdout-grep "\(bfloat16, optimizer adamw, precision bf16-mixed\)" -- \
	memplan check "$TMP/g7b.json"
expect_run "gen --precision bf16-mixed: 16 bytes per parameter" 0 --stdout-grep '"optimizer_state": 79900852224' -- \
	memplan check "$TMP/g7b.json" --format json
expect_run "gen --precision bf16-mixed: no batch fits 80 GB" 0 --stdout-grep '^liveness +none ' -- \
	memplan capacity "$TMP/g7b.json" --gpu h100-sxm --planner none
memplan gen gpt2 --precision bf16-mixed,grads=float32,state=int8,master=none -o "$TMP/gover.json" >/dev/null
expect_run "gen --precision overrides: an object" 0 -- \
	grep -q '"precision": {"policy": "bf16-mixed", "grads": "float32", "master": "none", "optimizer_state": "int8"}' "$TMP/gover.json"
done_testing
