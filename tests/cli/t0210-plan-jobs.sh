#!/bin/sh
# memplan plan with several jobs on one GPU: the hand-sized jobs of
# tests/unit/test_jobs.c (global peak 7000 B at offsets 0, 0, 6500 B at
# 0, 1), the plan file's "jobs", verify on the host with every job's data
# checked, plans of several planners under the global budget, and the
# refusals (a job that is not a net, --offset's count and values), none of
# which leaves an output file.
. "$(dirname "$0")/../lib.sh"

A=tests/data/job-a.json
B=tests/data/job-b.json

expect_run "two jobs, worst offsets" 0 --stdout plan-jobs.out -- \
	memplan plan $A $B --budget 5000 --planner greedy
expect_run "two jobs, json" 0 --stdout plan-jobs.json -- \
	memplan plan $A $B --budget 5000 --planner greedy --format json
expect_run "offsets given" 0 --stdout-grep "^predicted peak +6.3 KiB \(6500 B\) at step 4, 'b/b2': fits" -- \
	memplan plan $A $B --budget 1M --offset 0,1ms --planner greedy
expect_run "offsets in seconds" 0 --stdout-grep "offsets 0.000, 1.000 ms: as given" -- \
	memplan plan $A $B --budget 1M --offset 0,0.001s --planner greedy
expect_run "copies of one net are j0, j1" 0 --stdout-grep "^  j1 +0.000 " -- \
	memplan plan $A $A --budget 1M
expect_run "below the global layer-wise minimum" 1 \
	--stderr "memplan: plan: budget 3.9 KiB is below the layer-wise minimum 4.4 KiB (step 3, 'b/b2')" -- \
	memplan plan $A $B --budget 4000

# the plan file: "jobs" with each net, no top-level "net"; verify runs the
# jobs together, every read checked, the peak to the byte
expect_run "write the plan" 0 -- memplan plan $A $B --budget 5000 --planner greedy -o "$TMP/ab.json"
expect_run "plan file has jobs" 0 --stdout-grep '^ *"prefix": "b/",$' -- cat "$TMP/ab.json"
expect_run "plan file has no top-level net" 0 -- sh -c "! grep -q '^ \"net\":' '$TMP/ab.json'"
expect_run "verify on the host" 0 --stdout-grep '^data +every read checked: .* nothing lost$' -- \
	memplan verify "$TMP/ab.json" --device host --iters 2 --tolerance-peak 0
expect_run "verify peak to the byte" 0 --stdout-grep '^peak +[0-9]+ B measured, ([0-9]+) B predicted \(\+0.00%' -- \
	memplan verify "$TMP/ab.json" --device host --iters 1
expect_run "verify --report" 0 --stdout-grep '^peak ' -- \
	memplan verify "$TMP/ab.json" --device host --iters 1 --report "$TMP/ab.report"
expect_run "report digest" 0 --stdout-grep '"net_sha256": "[0-9a-f]{64}"' -- cat "$TMP/ab.report"
# re-planned from a report whose measured times are twice the predicted ones:
# each job's net gets its own ops' times, the plan keeps its jobs and the
# host runs it; verify --adapt re-plans the jobs every iteration
awk '{ if (match($0, /"measured_ms": [0-9.e+-]+/)) { v = substr($0, RSTART + 15, RLENGTH - 15);
	$0 = substr($0, 1, RSTART - 1) "\"measured_ms\": " (2 * v) substr($0, RSTART + RLENGTH) } print }' \
	"$TMP/ab.report" > "$TMP/ab2.report"
expect_run "replan two jobs" 0 \
	--stdout-grep "^op times  11.000 ms predicted, 22.000 ms measured, 22.000 ms corrected \(alpha 1: " -- \
	memplan replan "$TMP/ab.json" --report "$TMP/ab2.report" --alpha 1 -o "$TMP/ab2.json"
expect_run "replanned: each job's times corrected" 0 \
	--stdout-grep '^2$' -- sh -c "grep -c '\"time_source\": \"replan (alpha 1) of' '$TMP/ab2.json'"
expect_run "replanned: jobs kept, alone times of the corrected nets" 0 \
	--stdout-grep '^ *"alone_time_ms": 12.0,$' -- cat "$TMP/ab2.json"
expect_run "replanned: verify" 0 --stdout-grep '^data +every read checked: .* nothing lost$' -- \
	memplan verify "$TMP/ab2.json" --device host --iters 2 --tolerance-peak 0
expect_run "verify --adapt two jobs" 0 --stdout-grep "re-planned 2 times: net 'a\+b', planner greedy" -- \
	memplan verify "$TMP/ab.json" --device host --iters 3 --adapt 1

# two copies of a net whose times are half the true ones
# (tests/data/swap-chain-stall-half.json, as in t0610): --op-times gives each
# copy the true times (its ops without the job's prefix), and --adapt moves
# the prediction towards the measured 22.2 ms timeline by (1 - alpha) a
# round: 22.2 - 11.1 x 0.7^5 = 20.334 ms predicted in round 6
H=tests/data/swap-chain-stall-half.json
expect_run "copies on half the times" 0 -- memplan plan $H $H --budget 20K --planner greedy -o "$TMP/hh.json"
expect_run "copies: --op-times and --adapt converge" 0 --stdout-grep '^    6  greedy +20.334 +22.200 ' -- \
	memplan verify "$TMP/hh.json" --op-times examples/swap-chain-stall.json --iters 6 --adapt 1
expect_run "--op-times lacking a job's op" 2 \
	--stderr "memplan: --op-times: $A: no op named 'b/b1' (the plan's net has it)" -- \
	memplan verify "$TMP/ab.json" --op-times $A
# jobs of different nets: one --op-times file per job, in the plan's job
# order; a's ops at 22 ms each, b's at 21, 23 and 21 ms: the forward runs
# 66 + 65 ms on the one compute engine, and the 0.031 ms stall stays
memplan plan $A --budget 1M -o "$TMP/hh1.json" > /dev/null
sed 's/"time": \([0-9]*\)/"time": \1\1/' $A > "$TMP/a22.json"
sed 's/"time": \([0-9]\)}/"time": 2\1}/' $B > "$TMP/b2x.json"
expect_run "--op-times per job" 0 --stdout-grep '^forward +time +11.031 ms +131.031 ms ' -- \
	memplan verify "$TMP/ab.json" --op-times "$TMP/a22.json,$TMP/b2x.json" --iters 1
expect_run "--op-times: a file per job, not three" 2 \
	--stderr "memplan: --op-times: 3 files for a plan of 2 jobs: give one, or one per job" -- \
	memplan verify "$TMP/ab.json" --op-times "$TMP/a22.json,$TMP/b2x.json,$TMP/b2x.json"
expect_run "--op-times: in the plan's job order" 2 \
	--stderr "memplan: --op-times: $TMP/b2x.json: no op named 'a/a1' (the plan's net has it)" -- \
	memplan verify "$TMP/ab.json" --op-times "$TMP/b2x.json,$TMP/a22.json"
expect_run "--op-times: one file for a plan of one net" 2 \
	--stderr "memplan: --op-times: 2 files for a plan of one net: give one" -- \
	memplan verify "$TMP/hh1.json" --op-times "$A,$B"
expect_run "--op-times: an empty name" 2 --stderr "memplan: --op-times: '$TMP/a22.json,': an empty file name" -- \
	memplan verify "$TMP/ab.json" --op-times "$TMP/a22.json,"

# three small examples as jobs: a global liveness peak of 84622 B at the
# worst offsets; at 70000 B the swapping planners fit, within the budget in
# the simulator, and the host runs their plans with every job's data intact
J="examples/chain.json examples/diamond.json examples/residual.json"
expect_run "three jobs: liveness peak" 0 --stdout-grep "^predicted peak +82.6 KiB \(84622 B\)" -- \
	memplan plan $J --budget 10M --planner greedy
for pl in superneurons tensile greedy; do
	expect_run "three jobs $pl fits 72000" 0 --stdout-grep "^predicted peak .*: fits the budget 70.3 KiB" -- \
		memplan plan $J --budget 72000 --planner $pl -o "$TMP/$pl.json"
	expect_run "three jobs $pl: verify" 0 --stdout-grep '^data +every read checked: .* nothing lost$' -- \
		memplan verify "$TMP/$pl.json" --device host --iters 2 --tolerance-peak 0
done

# refusals: exit 2, the file or option named, no output file left
expect_run "a job that is a plan" 2 \
	--stderr "memplan: $TMP/ab.json: format: this is a plan, not a net (memplan verify reads plans)" -- \
	memplan plan $A "$TMP/ab.json" --budget 1M -o "$TMP/bad1.json"
expect_run "a job that is not JSON" 2 --stderr-grep "^memplan: tests/cli/t0210-plan-jobs.sh: " -- \
	memplan plan $A tests/cli/t0210-plan-jobs.sh --budget 1M -o "$TMP/bad2.json"
expect_run "a job that does not route" 2 \
	--stderr "memplan: tests/bad/op-reads-own-output.json: ops[0].inputs[1]: op 'f' reads 'y', which no earlier op writes" -- \
	memplan plan $A tests/bad/op-reads-own-output.json --budget 1M -o "$TMP/bad7.json"
expect_run "offset count" 2 --stderr "memplan: --offset: 1 offset for 2 jobs" -- \
	memplan plan $A $B --budget 1M --offset 5 -o "$TMP/bad3.json"
expect_run "offset value" 2 \
	--stderr "memplan: --offset: '12x' is not a time from 0 to 1e9 ms (12.5, 12.5ms or 0.5s)" -- \
	memplan plan $A $B --budget 1M --offset 0,12x -o "$TMP/bad4.json"
expect_run "negative offset" 2 \
	--stderr "memplan: --offset: '-1' is not a time from 0 to 1e9 ms (12.5, 12.5ms or 0.5s)" -- \
	memplan plan $A $B --budget 1M --offset=-1,0 -o "$TMP/bad5.json"
expect_run "offset for one job" 2 \
	--stderr "memplan: --offset: one net is one job; give the nets of several jobs" -- \
	memplan plan $A --budget 1M --offset 0 -o "$TMP/bad6.json"
# jobs share one GPU: nets timed for two devices are refused unless
# --device names the one they run on
sed 's/"name": "a",/"name": "a", "device": "a100-40g",/' $A >"$TMP/a-a100.json"
sed 's/"name": "b",/"name": "b", "device": "v100-16g",/' $B >"$TMP/b-v100.json"
expect_run "jobs for two devices" 2 --stdout empty \
	--stderr "memplan: plan: $TMP/b-v100.json is for v100-16g, $TMP/a-a100.json for a100-40g: the jobs share one GPU; give --device, or nets for one device" -- \
	memplan plan "$TMP/a-a100.json" "$TMP/b-v100.json" --budget 1M -o "$TMP/bad8.json"
expect_run "a job with a device, one without" 2 \
	--stderr "memplan: plan: $B is for no device, $TMP/a-a100.json for a100-40g: the jobs share one GPU; give --device, or nets for one device" -- \
	memplan plan "$TMP/a-a100.json" $B --budget 1M -o "$TMP/bad9.json"
expect_run "jobs for two devices, --device names one" 0 --stdout-grep "^net 'a\+b' under a budget of 1\.0 MiB on h100-sxm$" -- \
	memplan plan "$TMP/a-a100.json" "$TMP/b-v100.json" --budget 1M --device h100-sxm
expect_run "no partial output" 0 -- sh -c "! ls '$TMP'/bad*.json 2>/dev/null | grep -q ."
# a plan whose job net was edited is refused with that job's path
expect_run "edited job net" 2 --stderr-grep '^memplan: .*: jobs\[1\]\.net_sha256: does not match the embedded net' -- \
	sh -c "sed 's/\"bytes\": 4000/\"bytes\": 4001/' '$TMP/ab.json' > '$TMP/edited.json' && '$MEMPLAN' verify '$TMP/edited.json' --device host"

done_testing
