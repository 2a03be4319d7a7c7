#!/bin/sh
# memplan plan --planner dqn: plans that fit and verify on the host backend,
# training reproducible under --seed (the same plan file byte for byte), a
# saved model read back, and bad --model files refused with the file and
# the JSON path, exit 2 and no plan written.
. "$(dirname "$0")/../lib.sh"

live() {
	memplan analyze "examples/$1.json" --strategy liveness --format json |
		sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | tail -n 1
}

# the table, the training line's seconds masked
b=$(( $(live alexnet) / 100 * 70 ))
memplan plan examples/alexnet.json --budget $b --planner dqn -o "$TMP/a1.json" >"$TMP/table" 2>"$TMP/err"
rc=$?
expect_run "alexnet 70%: exit 0" 0 -- test "$rc" = 0
expect_run "alexnet 70%: nothing on stderr" 0 --stderr "" -- sh -c "test -z \"\$(cat '$TMP/err')\""
expect_run "alexnet 70%: fits" 0 --stdout-grep "^predicted peak .*: fits the budget" -- cat "$TMP/table"
expect_run "alexnet 70%: training reported" 0 \
	--stdout-grep "^dqn training     40 episodes in [0-9]+\.[0-9][0-9] s \(seed 1\)$" -- cat "$TMP/table"
expect_run "alexnet 70%: note" 0 \
	--stdout-grep "^planner          dqn: [0-9]+ offloads, [0-9]+ removals by the (greedy policy|best training episode) after 40 episodes" -- \
	cat "$TMP/table"
expect_run "json summary" 0 --stdout-grep '"dqn_episodes": 40,' -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --format json

# reproducible: the same seed writes the same plan
memplan plan examples/alexnet.json --budget $b --planner dqn -o "$TMP/a2.json" >/dev/null 2>&1
expect_run "same seed, same plan file" 0 -- cmp "$TMP/a1.json" "$TMP/a2.json"
memplan plan examples/alexnet.json --budget $b --planner dqn --seed 2 -o "$TMP/a3.json" >/dev/null 2>&1
expect_run "another seed plans too" 0 -- test -s "$TMP/a3.json"

# plans that fit run on the host backend, every read checked, the peak to
# the byte (the small nets, and U-Net's 70%: larger ones take too long)
for c in residual:90 residual:80 diamond:90 diamond:80 tiny:90 unet:70; do
	f=${c%:*} pct=${c#*:} p="$TMP/$f-$pct.json"
	expect_run "$f $pct%: plans" 0 -- memplan plan "examples/$f.json" --budget $(( $(live $f) / 100 * pct )) \
		--planner dqn --seed 3 -o "$p"
	expect_run "$f $pct%: verifies on the host" 0 --stdout-grep '^peak +([0-9]+) B measured, \1 B predicted' -- \
		memplan verify "$p" --device host --iters 1 --warmup 0 --tolerance-peak 0
done
expect_run "vgg16-b64 70%: fits" 0 --stdout-grep '"fits": true' -- memplan plan examples/vgg16-b64.json \
	--budget $(( $(live vgg16-b64) / 100 * 70 )) --planner dqn --format json

# a saved model, read back without training: the greedy policy alone
expect_run "save the model" 0 -- memplan plan examples/alexnet.json --budget $b --planner dqn \
	--save-model "$TMP/m.json"
expect_run "model file" 0 --stdout-grep '^ *"format": "memplan-dqn",$' -- cat "$TMP/m.json"
expect_run "plan from the model" 0 --stdout-grep "after 0 episodes" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --model "$TMP/m.json"
expect_run "fine-tune the model" 0 --stdout-grep "^dqn training     5 episodes in" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --model "$TMP/m.json" --episodes 5

# bad models: the file, the JSON path, exit 2, no plan file
rm -f "$TMP/out.json"
expect_run "missing model" 2 \
	--stderr "memplan: --model: $TMP/none.json: cannot open: No such file or directory" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --model "$TMP/none.json" -o "$TMP/out.json"
printf '{"format": "memplan-dqn", "version": 1,' >"$TMP/bad1.json"
expect_run "malformed model" 2 --stderr-grep "^memplan: --model: $TMP/bad1.json: line 1, column [0-9]+: " -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --model "$TMP/bad1.json" -o "$TMP/out.json"
sed 's/"W3": \[/"W3": ["x", /' "$TMP/m.json" >"$TMP/bad2.json"
expect_run "a weight not a number" 2 \
	--stderr-grep "^memplan: --model: $TMP/bad2.json: weights.W3(: |\[0\])" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --model "$TMP/bad2.json" -o "$TMP/out.json"
printf '{"format": "memplan-dqn", "version": 1, "p": 16}' >"$TMP/bad3.json"
expect_run "a model of another shape" 2 \
	--stderr "memplan: --model: $TMP/bad3.json: p: 16, but this memplan's networks have p 8" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --model "$TMP/bad3.json" -o "$TMP/out.json"
printf '{"format": "keras"}' >"$TMP/bad4.json"
expect_run "not a memplan model" 2 \
	--stderr "memplan: --model: $TMP/bad4.json: format: 'keras', expected 'memplan-dqn'" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --model "$TMP/bad4.json" -o "$TMP/out.json"
expect_run "no plan file written" 1 -- test -e "$TMP/out.json"
expect_run "--seed needs dqn" 2 --stderr "memplan: plan: --seed needs --planner dqn" -- \
	memplan plan examples/tiny.json --budget 1G --planner greedy --seed 3
expect_run "--episodes needs dqn" 2 --stderr "memplan: plan: --episodes needs --planner dqn" -- \
	memplan plan examples/tiny.json --budget 1G --episodes 3
expect_run "--model needs dqn" 2 --stderr "memplan: plan: --model needs --planner dqn" -- \
	memplan plan examples/alexnet.json --budget $b --planner greedy --model "$TMP/m.json"
expect_run "--save-model is not the net" 2 --stderr-grep "^memplan: plan: --save-model names 'examples/alexnet.json'" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --save-model examples/alexnet.json
expect_run "bad seed" 2 --stderr "memplan: --seed: 'x' is not a whole number from 0 to 9223372036854775807" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --seed x
expect_run "seed too large" 2 --stderr-grep "^memplan: --seed: '9223372036854775808' is not a whole number" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --seed 9223372036854775808
expect_run "bad episodes" 2 --stderr "memplan: --episodes: expected a whole number from 0 to 100000, got '-1'" -- \
	memplan plan examples/alexnet.json --budget $b --planner dqn --episodes -1
done_testing
