#!/bin/sh
# memplan replan and verify --adapt (TENSILE IV-E) on the host backend: a
# plan made on wrong times (tests/data/swap-chain-stall-half.json, every op
# at half its time in examples/swap-chain-stall.json) runs at the true times
# (verify --op-times) on the virtual clock, so every figure is exact and the
# same on any host.  replan moves each op's time towards what was measured,
# re-plans with the plan's planner and budget, and says what changed; a few
# rounds bring the predicted stall to the measured one.  Bad reports, bad
# weights and outputs over inputs exit 2 and write nothing.
. "$(dirname "$0")/../lib.sh"

HALF=tests/data/swap-chain-stall-half.json
TRUE=examples/swap-chain-stall.json

# run memplan with $TMP/ left out of what it prints, keeping its status
mp_here() {
	"$MEMPLAN" "$@" >"$TMP/o" 2>"$TMP/e"; st=$?
	sed "s|$TMP/||g" "$TMP/o"
	sed "s|$TMP/||g" "$TMP/e" >&2
	return $st
}

expect_run "greedy plan on half the times" 0 -- memplan plan $HALF --planner greedy --budget 11K -o "$TMP/g0.json"
expect_run "tensile plan on half the times" 0 -- memplan plan $HALF --planner tensile --budget 10K -o "$TMP/t0.json"

# --- the report carries per-op times and the net's digest ---
expect_run "verify at the true times" 0 -- \
	memplan verify "$TMP/g0.json" --op-times $TRUE --report "$TMP/g0.r.json"
expect_run "report digest" 0 --stdout-grep '^ "net_sha256": "[0-9a-f]{64}"$' -- cat "$TMP/g0.r.json"
expect_run "report ops" 0 --stdout-grep '^ "ops": \[$' -- cat "$TMP/g0.r.json"
expect_run "report names --op-times" 0 --stdout-grep "^ \"op_times\": \"$TRUE\",\$" -- cat "$TMP/g0.r.json"
# big.fwd runs once: 1 ms predicted (half its time), 2 ms measured
expect_run "report op times" 0 --stdout-grep '"op": "big.fwd",   "phase": "forward",   "runs": 1,   "predicted_ms": 1.0,   "measured_ms": 2.0' -- \
	sh -c "tr -d '\n' <'$TMP/g0.r.json'"
expect_run "verify says where the times come from" 0 --stdout-grep "^op times  $TRUE: each op runs for its time there, not the plan's \(--op-times\)$" -- \
	memplan verify "$TMP/g0.json" --op-times $TRUE --iters 1

# --- replan: at half the times greedy also swaps c1's and c2's weights
# (its plan weighed by the time after plan_run's last steps: 6.019 ms,
# against 6.050 ms recomputing c1); at the true times those swaps go ---
expect_run "replan greedy, alpha 1" 0 --stdout replan-greedy.out -- \
	mp_here replan "$TMP/g0.json" --report "$TMP/g0.r.json" --alpha 1 -o "$TMP/g1.json"
# at alpha 1 the times are the measured ones: the schedule is the one
# memplan plan makes on the true times
expect_run "plan on the true times" 0 -- memplan plan $TRUE --planner greedy --budget 11K -o "$TMP/true.json"
sed -n '/"schedule": \[/,$p' "$TMP/g1.json" >"$TMP/g1.sched"
sed -n '/"schedule": \[/,$p' "$TMP/true.json" >"$TMP/true.sched"
expect_run "alpha 1 re-plans as on the true times" 0 -- cmp "$TMP/g1.sched" "$TMP/true.sched"
expect_run "the new plan verifies" 0 --stdout-grep "nothing lost" -- \
	memplan verify "$TMP/g1.json" --op-times $TRUE --iters 1
expect_run "its net says where its times come from" 0 \
	--stdout-grep '"time_source": "replan \(alpha 1\) of the net.s times"' -- cat "$TMP/g1.json"

# --- replan in rounds from the command line, alpha 0.3 ---
cp "$TMP/t0.json" "$TMP/r0.json"
for i in 0 1 2; do
	expect_run "round $i: verify" 0 -- memplan verify "$TMP/r$i.json" --op-times $TRUE --report "$TMP/r$i.report"
	expect_run "round $i: replan" 0 -- \
		memplan replan "$TMP/r$i.json" --report "$TMP/r$i.report" -o "$TMP/r$((i + 1)).json"
	cp "$TMP/out" "$TMP/r$i.out"
done
expect_run "replan tensile, round 0" 0 --stdout replan-tensile.out -- \
	mp_here replan "$TMP/r0.json" --report "$TMP/r0.report"
expect_run "round 1 predicts 7.811 ms" 0 --stdout-grep '^time      7\.811 ms predicted before, 11\.661 ms measured, 8\.966 ms predicted after$' -- \
	cat "$TMP/r1.out"
expect_run "round 2: nothing moves" 0 --stdout-grep '^swaps     4 kept, 0 moved, 0 added, 0 removed$' -- cat "$TMP/r2.out"

# --- verify --adapt: the same rounds inside one run ---
# (the rounds' table is exact; the run's wall time below it is not)
expect_run "verify --adapt converges" 0 --stdout-grep "^plan      t0.json re-planned 5 times: net 'swap-chain-stall-half', planner tensile" -- \
	mp_here verify "$TMP/t0.json" --op-times $TRUE --iters 6 --adapt 1
sed -n '1,/^$/p' "$TMP/out" >"$TMP/adapt.out"
expect_run "verify --adapt rounds" 0 --stdout verify-adapt.out -- cat "$TMP/adapt.out"
# the rounds' predicted times are the command line's
expect_run "adapt round 2 is replan's round 1" 0 --stdout-grep '^    2  tensile           7\.811     11\.661      0\.596      0\.561' -- \
	cat "$TMP/adapt.out"
# converged: after the first re-plan nothing changes, and the last round's
# predicted stall is within 0.01 ms of the measured (0.565 and 0.561)
awk '$1 ~ /^[0-9]+$/ && $1 >= 2 && $1 <= 5 && !/swaps 0 moved, \+0 -0; recomputes \+0 -0/ { bad = 1 }
     $1 == 6 { d = $5 - $6; if (d < 0) d = -d; if (d > 0.01) bad = 1; last = 1 }
     END { exit bad || !last }' "$TMP/adapt.out" && ok || not_ok "adapt: the plan settles after round 1 and its stall meets the measurement"
expect_run "--adapt with a report writes the last round's" 0 -- \
	memplan verify "$TMP/t0.json" --op-times $TRUE --iters 3 --adapt 1 --report "$TMP/a.report"
expect_run "which replan reads against the plan it ran" 2 --stderr-grep "net_sha256: the report measured another net than the plan's" -- \
	memplan replan "$TMP/t0.json" --report "$TMP/a.report"
expect_run "--alpha weighs --adapt" 0 --stdout-grep '^    2  tensile +10\.011 ' -- \
	memplan verify "$TMP/t0.json" --op-times $TRUE --iters 2 --adapt 1 --alpha 0.7
# TENSILE's trigger: re-plan only where the op times, their moving averages
# summed, moved more than 10% from those the plan was made with: 30.0% and
# 16.2% (every op measured at 2/1.3 of its time: 1 + 0.3 x 0.538), then
# 9.7% kept, and the averages move on, 16.5% (1.0974 + 0.3 x (1.3245 -
# 1.0974)): re-planned, as --adapt 1 re-plans its fifth round
expect_run "--adapt-threshold: TENSILE's trigger" 0 --stdout-grep "^plan      t0.json re-planned 3 times:" -- \
	mp_here verify "$TMP/t0.json" --op-times $TRUE --iters 8 --adapt 1 --adapt-threshold 10
sed -n '1,/^$/p' "$TMP/out" >"$TMP/adapt-thr.out"
expect_run "--adapt-threshold rounds" 0 --stdout verify-adapt-threshold.out -- cat "$TMP/adapt-thr.out"
expect_run "--adapt-threshold 0: every round" 0 --stdout-grep "^plan      t0.json re-planned 5 times:" -- \
	mp_here verify "$TMP/t0.json" --op-times $TRUE --iters 6 --adapt 1 --adapt-threshold 0
# measured as predicted: the averages never move, nothing is re-planned
expect_run "--adapt-threshold: nothing moved" 0 --stdout-grep "^    1  tensile .*  op times moved 0\.0%; plan kept$" -- \
	memplan verify "$TMP/t0.json" --iters 3 --adapt 1 --adapt-threshold 1
expect_run "--adapt-threshold: kept throughout" 0 --stdout-grep "^plan      $TMP/t0.json: net" -- \
	memplan verify "$TMP/t0.json" --iters 3 --adapt 1 --adapt-threshold 1

# --- bad input: exit 2, one line, no output file ---
expect_run "missing report" 2 --stdout empty \
	--stderr "memplan: $TMP/nosuch.json: cannot open: No such file or directory" -- \
	memplan replan "$TMP/r0.json" --report "$TMP/nosuch.json" -o "$TMP/bad.json"
[ -e "$TMP/bad.json" ] && not_ok "missing report: no output" || ok
expect_run "report for another plan's net" 2 --stdout empty \
	--stderr-grep "^memplan: $TMP/r1.report: net_sha256: the report measured another net than the plan's \([0-9a-f]{12}\.\.\., the plan's [0-9a-f]{12}\.\.\.\)$" -- \
	memplan replan "$TMP/r0.json" --report "$TMP/r1.report" -o "$TMP/bad.json"
[ -e "$TMP/bad.json" ] && not_ok "another net: no output" || ok
expect_run "a plan as the report" 2 --stdout empty \
	--stderr "memplan: $TMP/r1.json: format: 'memplan-plan/1', expected \"memplan-verify/1\" (a memplan verify --report)" -- \
	memplan replan "$TMP/r0.json" --report "$TMP/r1.json" -o "$TMP/bad.json"
sed 's/"op": "c2.fwd"/"op": "c9.fwd"/' "$TMP/r0.report" >"$TMP/renamed.report"
expect_run "a report op the net lacks" 2 --stdout empty \
	--stderr "memplan: $TMP/renamed.report: ops[2].op: no op named 'c9.fwd' in the plan's net" -- \
	memplan replan "$TMP/r0.json" --report "$TMP/renamed.report" -o "$TMP/bad.json"
sed '0,/"measured_ms": [0-9.]*/s//"measured_ms": -1/' "$TMP/r0.report" >"$TMP/negative.report"
expect_run "a negative measured time" 2 --stdout empty \
	--stderr "memplan: $TMP/negative.report: ops[0].measured_ms: must not be negative, got -1 ms" -- \
	memplan replan "$TMP/r0.json" --report "$TMP/negative.report" -o "$TMP/bad.json"
[ -e "$TMP/bad.json" ] && not_ok "bad reports: no output" || ok
for a in 0 1.5 -0.3 x ''; do
	expect_run "--alpha '$a'" 2 --stdout empty \
		--stderr "memplan: --alpha: expected a weight above 0 and at most 1, got '$a'" -- \
		memplan replan "$TMP/r0.json" --report "$TMP/r0.report" --alpha "$a" -o "$TMP/bad.json"
done
expect_run "verify --alpha 2" 2 --stderr "memplan: --alpha: expected a number above 0 and at most 1, got '2'" -- \
	memplan verify "$TMP/r0.json" --adapt 1 --alpha 2
[ -e "$TMP/bad.json" ] && not_ok "bad alpha: no output" || ok
expect_run "no --report" 2 --stderr "memplan: replan: --report FILE is required (a memplan verify --report of the plan)" -- \
	memplan replan "$TMP/r0.json"
expect_run "-o over the plan" 2 --stderr "memplan: replan: -o '$TMP/r0.json' is the plan it reads: write the plan elsewhere" -- \
	memplan replan "$TMP/r0.json" --report "$TMP/r0.report" -o "$TMP/r0.json"
expect_run "-o over the report" 2 --stderr "memplan: replan: -o '$TMP/r0.report' is the report it reads: write the plan elsewhere" -- \
	memplan replan "$TMP/r0.json" --report "$TMP/r0.report" -o "$TMP/r0.report"
expect_run "--alpha without --adapt" 2 --stderr "memplan: --alpha: weighs the measured times of --adapt N; give --adapt too" -- \
	memplan verify "$TMP/r0.json" --alpha 0.5
expect_run "--adapt-threshold without --adapt" 2 --stdout empty \
	--stderr "memplan: --adapt-threshold: says when --adapt N re-plans; give --adapt too" -- \
	memplan verify "$TMP/r0.json" --adapt-threshold 5
for v in -1 x 1001 ''; do
	expect_run "--adapt-threshold '$v'" 2 --stdout empty \
		--stderr "memplan: --adapt-threshold: expected a percentage from 0 to 1000, got '$v'" -- \
		memplan verify "$TMP/r0.json" --adapt 1 --adapt-threshold "$v"
done
expect_run "--op-times for another net" 2 --stderr "memplan: --op-times: examples/chain.json: no op named 'c1.fwd' (the plan's net has it)" -- \
	memplan verify "$TMP/r0.json" --op-times examples/chain.json
done_testing
