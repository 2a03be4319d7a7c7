#!/bin/sh
# memplan verify: bad usage and bad input exit 2 with one line naming the
# problem; plan files that are not plans, or whose schedule or arena no longer
# add up, are refused by the plan reader before anything runs.
. "$(dirname "$0")/../lib.sh"
LOOSE="--tolerance-time 100000"   # not testing time here; CI hosts are noisy
memplan plan examples/chain.json --budget 64K -o "$TMP/p.json" >/dev/null

expect_run "no plan" 2 --stderr-grep '^usage: memplan verify PLAN.json' -- memplan verify
expect_run "two plans" 2 --stderr-grep '^usage: memplan verify PLAN.json' -- memplan verify "$TMP/p.json" "$TMP/p.json"
expect_run "probe takes no plan" 2 --stderr-grep '^usage: memplan verify PLAN.json' -- memplan verify --probe "$TMP/p.json"
expect_run "missing file" 2 --stderr-grep "^memplan: $TMP/none.json: " -- memplan verify "$TMP/none.json"
expect_run "a net, not a plan" 2 \
	--stderr "memplan: examples/chain.json: format: this is a net, not a plan (memplan plan makes one)" -- \
	memplan verify examples/chain.json
printf '{"format": "memplan-plan/1",' >"$TMP/trunc.json"
expect_run "truncated plan" 2 --stderr-grep "^memplan: $TMP/trunc.json: line 1, column [0-9]+: invalid JSON: " -- \
	memplan verify "$TMP/trunc.json"
# an offset moved onto another live allocation: the reader's arena check
sed '0,/"offset": [1-9][0-9]*,/s//"offset": 0,/' "$TMP/p.json" >"$TMP/overlap.json"
expect_run "overlapping offsets" 2 --stderr-grep "^memplan: $TMP/overlap.json: schedule\[[0-9]+\]\.offset: '[^']+' at \[0, [0-9]+\) overlaps '[^']+'" -- \
	memplan verify "$TMP/overlap.json"
# a note that would write escape sequences to whoever prints it
sed 's/"note": "/"note": "\\u001b[2Kforged /' "$TMP/p.json" >"$TMP/note.json"
expect_run "control character in the note" 2 \
	--stderr "memplan: $TMP/note.json: note: control character U+001B at byte 0 (names and keywords reach terminals and reports)" -- \
	memplan verify "$TMP/note.json"

expect_run "iters 0" 2 --stderr "memplan: --iters: expected a whole number from 1 to 100000, got '0'" -- \
	memplan verify "$TMP/p.json" --iters 0
expect_run "iters word" 2 --stderr "memplan: --iters: expected a whole number from 1 to 100000, got 'many'" -- \
	memplan verify "$TMP/p.json" --iters many
expect_run "warmup negative" 2 --stderr "memplan: --warmup: expected a whole number from 0 to 100000, got '-1'" -- \
	memplan verify "$TMP/p.json" --warmup -1
expect_run "time scale 0" 2 --stderr "memplan: --time-scale: expected a number above 0 and at most 1000, got '0'" -- \
	memplan verify "$TMP/p.json" --time-scale 0
expect_run "time scale nan" 2 --stderr "memplan: --time-scale: expected a number above 0 and at most 1000, got 'nan'" -- \
	memplan verify "$TMP/p.json" --time-scale nan
expect_run "tolerance negative" 2 --stderr "memplan: --tolerance-peak: expected a percentage from 0 to 1e+06, got '-2'" -- \
	memplan verify "$TMP/p.json" --tolerance-peak -2
expect_run "tolerance junk" 2 --stderr "memplan: --tolerance-time: expected a percentage from 0 to 1e+06, got '10%%'" -- \
	memplan verify "$TMP/p.json" --tolerance-time 10%%
expect_run "time judged on the virtual clock" 2 --stdout empty \
	--stderr "memplan: --tolerance-time: the virtual clock gives every action its modelled time, so there is no time to judge (--clock wall)" -- \
	memplan verify "$TMP/p.json" --tolerance-time 10 --clock virtual
expect_run "tolerance with percent sign" 0 -- memplan verify "$TMP/p.json" --iters 1 --tolerance-time 100000% --tolerance-peak 2%
expect_run "unknown allocator" 2 --stderr "memplan: --alloc: unknown allocator 'slab' (arena, pool or async)" -- \
	memplan verify "$TMP/p.json" --alloc slab
expect_run "async is CUDA's" 2 \
	--stderr "memplan: --alloc: async is cudaMallocAsync, for --device cuda (the host backend has arena and pool)" -- \
	memplan verify "$TMP/p.json" --alloc async
expect_run "unknown compute mode" 2 --stderr "memplan: --compute: unknown mode 'fast' (real or timed)" -- \
	memplan verify "$TMP/p.json" --compute fast
expect_run "compute timed on the host" 0 --stdout-grep '^backend +host: ' -- \
	memplan verify "$TMP/p.json" --iters 1 --compute timed --tolerance-time 100000
expect_run "unknown clock" 2 --stderr "memplan: --clock: unknown clock 'cpu' (virtual or wall)" -- \
	memplan verify "$TMP/p.json" --clock cpu
expect_run "virtual clock is the host's" 2 \
	--stderr "memplan: --clock: virtual is the host backend's clock; --device cuda runs on the GPU's" -- \
	memplan verify "$TMP/p.json" --device cuda --clock virtual
expect_run "unknown backend" 2 --stderr "memplan: --device: unknown backend 'tpu' (host or cuda)" -- \
	memplan verify "$TMP/p.json" --device tpu
expect_run "unknown option" 2 --stderr-grep "^memplan: verify: unknown or incomplete option '--budget'" -- \
	memplan verify "$TMP/p.json" --budget 1G
expect_run "option without value" 2 --stderr-grep "^memplan: verify: unknown or incomplete option '--iters'" -- \
	memplan verify "$TMP/p.json" --iters
expect_run "report not writable" 2 --stderr-grep "^memplan: --report: cannot write '$TMP/no/such/dir/r.json': " -- \
	memplan verify "$TMP/p.json" --iters 1 $LOOSE --report "$TMP/no/such/dir/r.json"
# the steady state: iterations run back to back, so a parameter the plan
# loses is caught, named with the action that lost it (issue 12)
memplan plan examples/chain.json --budget 64K -o "$TMP/steady.json" >/dev/null 2>&1 ||
	not_ok "steady: a chain plan" "memplan plan failed"
append() { # FILE ACTION-JSON: the plan with one action appended
	head -n -2 "$TMP/steady.json" | sed '$s/}$/},/'
	printf '  %s\n ]\n}\n' "$2"
}
append "$TMP/steady.json" '{"action": "free", "tensor": "conv.param0", "stream": "compute", "start_ms": 6.0, "end_ms": 6.0, "resident_bytes": 1960}' >"$TMP/lost.json"
expect_run "a parameter freed at the end is lost" 1 --stderr "memplan: verify: schedule[49] free 'conv.param0': 'conv.param0' is lost: freed, and the next iteration expects it on the device from schedule[0] on (parameters, optimizer state, kept gradients and inputs outlive the iteration)" -- \
	memplan verify "$TMP/lost.json" --iters 1 --warmup 0
# Found (review): a swap-in left unwaited at the end passed, in the pool
append "$TMP/steady.json" '{"action": "swap_out", "tensor": "fc.param0", "stream": "d2h", "bytes": 800, "start_ms": 6.0, "end_ms": 6.1, "resident_bytes": 2260},
  {"action": "wait", "tensor": "fc.param0", "stream": "compute", "start_ms": 6.1, "end_ms": 6.1, "resident_bytes": 1460},
  {"action": "swap_in", "tensor": "fc.param0", "stream": "h2d", "bytes": 800, "offset": 13312, "start_ms": 6.1, "end_ms": 6.2, "resident_bytes": 2260}' >"$TMP/nowait.json"
for alloc in arena pool; do
	expect_run "a parameter swapped in and never waited for ($alloc)" 1 --stderr "memplan: verify: schedule[51] swap_in 'fc.param0': 'fc.param0' is swapped in and never waited for, and the next iteration expects it on the device from schedule[2] on (wait for its swap-in)" -- \
		memplan verify "$TMP/nowait.json" --iters 3 --warmup 1 --alloc $alloc --tolerance-peak 1000
done
append "$TMP/steady.json" '{"action": "swap_out", "tensor": "fc.param0", "stream": "d2h", "bytes": 800, "start_ms": 6.0, "end_ms": 6.1, "resident_bytes": 1460}' >"$TMP/away.json"
expect_run "a parameter freed at the end is lost, in the pool too" 1 --stderr "memplan: verify: schedule[49] free 'conv.param0': 'conv.param0' is lost: freed, and the next iteration expects it on the device from schedule[0] on (parameters, optimizer state, kept gradients and inputs outlive the iteration)" -- \
	memplan verify "$TMP/lost.json" --iters 1 --warmup 0 --alloc pool --tolerance-peak 1000
expect_run "a parameter swapped out and never back in" 1 --stderr "memplan: verify: schedule[49] swap_out 'fc.param0': 'fc.param0' is swapped out and never back in, and the next iteration expects it on the device from schedule[2] on" -- \
	memplan verify "$TMP/away.json" --iters 1 --warmup 0
expect_run "the plan itself keeps its weights" 0 --stdout-grep "nothing lost" -- memplan verify "$TMP/steady.json" --iters 1 --warmup 0
# ... and gives back everything else: an activation kept to the end leaks on
# every iteration, refused by the reader
awk '/^  \{$/ { blk = $0; inblk = 1; next }
     inblk { blk = blk "\n" $0; if ($0 ~ /^  \},?$/) { inblk = 0;
             if (!(blk ~ /"action": "free"/ && blk ~ /"tensor": "fc.out"/)) print blk }; next }
     { print }' "$TMP/steady.json" >"$TMP/leak.json"
expect_run "an activation kept to the end leaks, refused before anything runs" 2 --stdout empty --stderr-grep "^memplan: $TMP/leak.json: schedule\[[0-9]+\] alloc 'fc.out': still on the device at the end of the iteration, and the next one makes it again: a leak on every iteration \(free it after its last reader\)$" -- \
	memplan verify "$TMP/leak.json" --iters 1 --warmup 0

# the digest covers the net's values, not their spelling: 1.0 written as 1
# (what jq does) keeps it; a changed value does not
sed 's/\([0-9]\)\.0\(,\{0,1\}\)$/\1\2/' "$TMP/steady.json" >"$TMP/respelled.json"
expect_run "respelled numbers differ" 1 -- cmp -s "$TMP/steady.json" "$TMP/respelled.json"
# a plan memplan wrote before the digest covered values (0ddeed9) still reads
expect_run "a plan with the earlier digest" 0 --stdout-grep "nothing lost" -- \
	memplan verify tests/data/plans/chain-0ddeed9.json --iters 1 --warmup 0
expect_run "respelled numbers keep the digest" 0 --stdout-grep "nothing lost" -- \
	memplan verify "$TMP/respelled.json" --iters 1 --warmup 0
sed '0,/"bytes": 1000,/s//"bytes": 1004,/' "$TMP/steady.json" >"$TMP/revalued.json"
expect_run "a changed value breaks it" 2 \
	--stderr "memplan: $TMP/revalued.json: net_sha256: does not match the embedded net (edited by hand?)" -- \
	memplan verify "$TMP/revalued.json" --iters 1 --warmup 0

# a deviation past a million percent prints in three significant digits
expect_run "a vanishing time scale" 1 --stderr-grep "^memplan: verify: time [0-9.]+ ms is [0-9.]+e\\+[0-9]+% above the predicted" -- \
	memplan verify "$TMP/steady.json" --iters 1 --warmup 0 --time-scale 1e-300 --tolerance-time 10
if [ "$(awk 'length($0) > 200' "$TMP/out" | wc -l)" = 0 ]; then ok; else not_ok "no line runs past 200 characters"; fi

# an arena edited far past its highest allocation is refused when read
sed '/"arena": {/,/}/s/"bytes": [0-9]*/"bytes": 1125899906842624/' "$TMP/steady.json" >"$TMP/huge.json"
expect_run "an arena of 1 PiB" 2 --stderr-grep "^memplan: $TMP/huge.json: arena.bytes: 1125899906842624, but allocations reach only [0-9]+ \(the arena ends at its highest allocation\)$" -- \
	memplan verify "$TMP/huge.json" --iters 1 --warmup 0

done_testing
