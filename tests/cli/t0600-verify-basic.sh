#!/bin/sh
# memplan verify on the host backend: plans of the small examples, made by
# 'memplan plan -o' with every planner at budgets that make them swap and
# recompute, run with their data intact and, on the virtual clock, the
# measured peak equal to the prediction to the byte; the report file; the
# pool allocator; the clocks; the tolerance verdicts (exit 1).  The host's
# time is information unless --tolerance-time is given; only the verdict
# logic is tested for time (--tolerance-time 0 always fails).
. "$(dirname "$0")/../lib.sh"

# every planner on every small example at its liveness peak and at 90%, 80%
# and 60% of it: each plan that fits verifies, peak exact (tolerance 0)
n=0; swapping=0; recomputing=0
for f in chain diamond residual inplace-relu workspace swap-chain swap-wait swap-chain-stall tiny; do
	peak=$(memplan analyze "examples/$f.json" --strategy liveness --format json |
		sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' | tail -n 1)
	for pl in superneurons tf-swap tensile greedy chain chen checkpoint-blocks optimal; do
		for pct in 100 90 80 60; do
			p="$TMP/$f-$pl-$pct.json"
			memplan plan "examples/$f.json" --planner $pl --budget $((peak / 100 * pct)) -o "$p" >/dev/null 2>&1 ||
				continue
			n=$((n + 1))
			memplan verify "$p" --iters 2 --warmup 1 --tolerance-peak 0 --report "$p.report" >"$p.out" 2>&1
			expect_run "verify $f $pl $pct%: exit 0" 0 -- test $? -eq 0
			expect_run "verify $f $pl $pct%: peak to the byte" 0 \
				--stdout-grep '^peak +([0-9]+) B measured, \1 B predicted \(\+0\.00%, tolerance 0%\): ok$' -- cat "$p.out"
			expect_run "verify $f $pl $pct%: data" 0 \
				--stdout-grep '^data +every read checked: [1-9][0-9]* reads, [0-9]+ copies, [0-9]+ recomputed tensors per iteration \(.* hashed\); nothing lost$' -- \
				cat "$p.out"
			grep -q ' [1-9][0-9]* copies' "$p.out" && swapping=$((swapping + 1))
			grep -q ' [1-9][0-9]* recomputed tensors' "$p.out" && recomputing=$((recomputing + 1))
		done
	done
done
# the budgets give plans (the tightest may be below what a planner reaches),
# and some of them move tensors
expect_run "plans verified ($n)" 0 -- test "$n" -ge 100
expect_run "plans that swap ($swapping)" 0 -- test "$swapping" -ge 20
expect_run "plans that recompute ($recomputing)" 0 -- test "$recomputing" -ge 20

# the table: phases, ratios, bytes moved at the modelled link
memplan plan examples/chain.json --budget 13000 -o "$TMP/chain.json" >/dev/null
expect_run "table header" 0 --stdout-grep '^phase +predicted +measured +ratio$' -- \
	memplan verify "$TMP/chain.json" --iters 2
expect_run "table backward" 0 --stdout-grep '^backward +time +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+$' -- \
	memplan verify "$TMP/chain.json" --iters 2
expect_run "table swaps" 0 --stdout-grep '^ +h2d +([0-9.]+ [KMG]?i?B) +\1 +1\.000$' -- \
	memplan verify "$TMP/chain.json" --iters 2
expect_run "table link rate" 0 --stdout-grep '^ +d2h rate +0\.00[0-9]+ GB/s +0\.00[0-9]+ GB/s +[0-9.]+$' -- \
	memplan verify "$TMP/chain.json" --iters 2
expect_run "backend line" 0 --stdout-grep "^backend +host: a [0-9.]+ KiB arena at the plan's offsets$" -- \
	memplan verify "$TMP/chain.json" --iters 1
expect_run "runs line" 0 --stdout-grep '^runs +2 warm-up \+ 4 measured iterations, median shown; times x 0.5 \(--time-scale\)$' -- \
	memplan verify "$TMP/chain.json" --iters 4 --warmup 2 --time-scale 0.5

# the clocks: virtual by default, said in the output and the report; the
# host's time is information unless a tolerance is given
expect_run "clock line" 0 --stdout-grep '^clock +virtual: actions last their modelled time, so the peak follows the simulation on any host' -- \
	memplan verify "$TMP/chain.json" --iters 1
expect_run "time is information" 0 \
	--stdout-grep "^time +[0-9.]+ ms measured, [0-9.]+ ms predicted x 1 \([-+][0-9.]+%\): information only, the host does not run at the GPU's speed \(--tolerance-time PCT judges it\)$" -- \
	memplan verify "$TMP/chain.json" --iters 1
expect_run "report with the clock" 0 -- memplan verify "$TMP/chain.json" --iters 1 --report "$TMP/chain.json.r"
expect_run "report clock" 0 --stdout-grep '^ "clock": "virtual",$' -- cat "$TMP/chain.json.r"
expect_run "report time not judged" 0 --stdout-grep '^  "judged": false,$' -- cat "$TMP/chain.json.r"
expect_run "report time tolerance null" 0 --stdout-grep '^  "time": null$' -- cat "$TMP/chain.json.r"
expect_run "wall clock" 0 --stdout-grep '^peak +[0-9]+ B measured' -- \
	memplan verify "$TMP/chain.json" --iters 1 --clock wall --report "$TMP/chain.json.w"
memplan verify "$TMP/chain.json" --iters 1 --clock wall >"$TMP/wall.out"
expect_run "wall clock: no clock line" 1 -- grep -q '^clock ' "$TMP/wall.out"
expect_run "wall clock: the peak line" 0 -- grep -q '^peak ' "$TMP/wall.out"
expect_run "report wall clock" 0 --stdout-grep '^ "clock": "wall",$' -- cat "$TMP/chain.json.w"

# time tolerance: no run matches a prediction to 0%
expect_run "time outside tolerance" 1 \
	--stderr-grep '^memplan: verify: time [0-9.]+ ms is [0-9.]+% (above|below) the predicted [0-9.]+ ms \(tolerance 0%\)$' -- \
	memplan verify "$TMP/chain.json" --iters 1 --tolerance-time 0
expect_run "time verdict line" 1 --stdout-grep '^time +[0-9.]+ ms measured, [0-9.]+ ms predicted x 1 \([-+][0-9.]+%, tolerance 0%\): OUTSIDE$' -- \
	memplan verify "$TMP/chain.json" --iters 1 --tolerance-time 0

# the report
expect_run "report written" 0 -- memplan verify "$TMP/chain.json" --iters 2 --report "$TMP/r.json"
expect_run "report format" 0 --stdout-grep '^ "format": "memplan-verify/1",$' -- cat "$TMP/r.json"
expect_run "report ok" 0 --stdout-grep '^ "ok": true,$' -- cat "$TMP/r.json"
expect_run "report plan" 0 --stdout-grep "^ \"plan\": \"$TMP/chain.json\",\$" -- cat "$TMP/r.json"
expect_run "report steps" 0 --stdout-grep '^ "steps": \[$' -- cat "$TMP/r.json"
expect_run "report step fields" 0 --stdout-grep '^   "swap_in_bytes": [0-9]+,$' -- cat "$TMP/r.json"
expect_run "report actions" 0 --stdout-grep '^   "action": "swap_in",$' -- cat "$TMP/r.json"
expect_run "report iterations" 0 --stdout-grep '^  "iterations_ms": \[$' -- cat "$TMP/r.json"
expect_run "report not ok" 1 -- memplan verify "$TMP/chain.json" --iters 1 --tolerance-time 0 --report "$TMP/r0.json"
expect_run "report says not ok" 0 --stdout-grep '^ "ok": false,$' -- cat "$TMP/r0.json"

# the pool: its high-water mark is what the device needs, with 1 KiB blocks
memplan plan examples/chain.json --budget 64K -o "$TMP/chain64.json" >/dev/null
expect_run "pool verdict" 1 \
	--stderr-grep '^memplan: verify: peak [0-9.]+ KiB \([0-9]+ B\) is [0-9.]+% above the predicted [0-9.]+ KiB \(tolerance 2%\)$' -- \
	memplan verify "$TMP/chain64.json" --alloc pool --iters 1
expect_run "pool line" 0 \
	--stdout-grep '^pool +high-water [0-9.]+ KiB: [0-9.]+x the plan.s arena [0-9.]+ KiB, [0-9.]+x the live peak [0-9.]+ KiB$' -- \
	memplan verify "$TMP/chain64.json" --alloc pool --iters 1 --tolerance-peak 200
expect_run "pool backend" 0 \
	--stdout-grep '^backend +host: a 64.0 KiB pool of 1024-byte blocks, first fit \(SuperNeurons 3.2.1\)$' -- \
	memplan verify "$TMP/chain64.json" --alloc pool --iters 1 --tolerance-peak 200
# a budget the pool cannot hold the plan in: an allocation fails
expect_run "pool exhausted" 1 \
	--stderr-grep "^memplan: verify: schedule\[[0-9]+\] (alloc|swap_in) '[^']+': the pool \([0-9]+ bytes in 1024-byte blocks\) has no free run of [0-9]+ blocks" -- \
	memplan verify "$TMP/chain.json" --alloc pool --iters 1

expect_run "help" 0 --stdout-grep '^usage: memplan verify PLAN.json \[--device host\|cuda\]' -- memplan verify --help
expect_run "listed" 0 --stdout-grep '^  verify +run a plan' -- memplan --help
done_testing
