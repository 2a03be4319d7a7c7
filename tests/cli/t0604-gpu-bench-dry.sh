#!/bin/sh
# tools/gpu-bench.sh end to end, as a lent GPU machine runs it, with the
# gpu-dry memplan (the Makefile's GPU_DRY: the CUDA backend built by the
# host compiler against tests/fakecuda, with a fake driver): probe, profile,
# plan at three budgets, verify with real kernels and timed, and the table.
# It catches what would waste a GPU session's few minutes: a script or
# report error, or a verify that fails on the device for a reason the host
# backend does not share (real kernels check only their first iteration: a
# swapped tensor read after its swap-in in a later one was taken for
# unwritten, and every swapping plan failed from its second iteration).
# Every run's data must check; with FAKECUDA_OUTPUTS=hash the fake
# libraries write what a function of their inputs gives, so a rebuilt tensor
# must match its first run (residual's plans recompute), and the fakes
# must object to no call (stream order included).  The fakes keep a
# clock per stream, copies overlapping compute, and profile measured their
# kernels and link, so each run's peak, time and stalls must be the
# predicted ones to the digit: residual at 70% swaps and stalls (with one
# clock for all streams it measured no stall and a peak 5.25% under).
. "$(dirname "$0")/../lib.sh"
if [ -z "${GPU_DRY:-}" ] || [ ! -x "$GPU_DRY" ]; then
	skip "gpu-bench dry run" "no gpu-dry memplan (make test builds it where the CUDA, cuDNN and cuBLAS headers are)"
	done_testing
	exit
fi
if ! command -v python3 >/dev/null 2>&1; then
	skip "gpu-bench dry run" "no python3 (gpu-bench.sh and verify-table.py need it)"
	done_testing
	exit
fi
out=$TMP/gpu
expect_run "gpu-bench.sh runs through" 0 --stdout-grep '^\| residual \| 80% \| timed \|' -- \
	env FAKECUDA_OUTPUTS=hash MEMPLAN="$GPU_DRY" NETS="examples/tiny.json examples/residual.json" PCTS="90 80 70" \
	sh tools/gpu-bench.sh "$out"
expect_run "the probe finds the fake device" 0 --stdout-grep '^cuda +device 0: fakecuda, 80\.0 GiB total' -- \
	cat "$out/probe.txt"
expect_run "the probe measures the latency per copy" 0 \
	--stdout-grep '^cuda +pinned copies of 4\.0 KiB, median of 5: [0-9.]+ us latency \(time less the bytes at that rate\)$' -- \
	cat "$out/probe.txt"
expect_run "profile measured the net on it" 0 --stdout-grep '"time_source": "measured:fakecuda"' -- \
	cat "$out/residual.measured.json"
# residual.json's device is a toy link (0.01 GB/s, 100 us): the measured
# net's is the fake GPU's (10 GB/s, some 1 us per copy)
expect_run "profile says the device is now the GPU" 0 \
	--stdout-grep "^link +h2d 10\.00 GB/s, d2h 10\.00 GB/s, [0-9.]+ us per copy \(pinned copies, median of 5\): the net's device is now 'fakecuda'\$" -- \
	cat "$out/residual.profile.txt"
expect_run "the measured net's device is the GPU" 0 --stdout-grep '^fakecuda 85899345920 10 10 [0-9.]+ toy-link$' -- \
	python3 -c "import json, sys; d = json.load(open(sys.argv[1]))['device']; \
print(d['name'], d['memory'], round(d['h2d_gbps']), round(d['d2h_gbps']), d['latency_us'], d['source'].split(\"'\")[1])" \
	"$out/residual.measured.json"
expect_run "ten rows in the table" 0 --stdout-grep '^10$' -- sh -c "grep -c -E '^\| (tiny|residual) \|' '$out/verify-table.md'"
for run in tiny:90 tiny:80 residual:90 residual:80 residual:70; do
	net=${run%:*} pct=${run#*:}
	for mode in verify timed; do
		expect_run "$net at $pct%, $mode: data checked" 0 \
			--stdout-grep '^data +every read checked: .*; nothing lost$' -- cat "$out/$net.$pct.$mode.txt"
		expect_run "$net at $pct%, $mode: peak as predicted" 0 \
			--stdout-grep '^peak +[0-9]+ B measured, [0-9]+ B predicted \(\+0\.00%, tolerance 2%\): ok$' -- \
			cat "$out/$net.$pct.$mode.txt"
		expect_run "$net at $pct%, $mode: time as predicted" 0 \
			--stdout-grep '^time +[0-9.]+ ms measured, [0-9.]+ ms predicted x 1 \([-+]0\.00%, tolerance 10%\): ok$' -- \
			cat "$out/$net.$pct.$mode.txt"
		expect_run "$net at $pct%, $mode: every phase's stall as predicted" 0 --stdout-grep '^0$' -- \
			sh -c "awk '\$1 == \"stall\" && \$2 != \$4 { n++ } END { print n + 0 }' '$out/$net.$pct.$mode.txt'"
	done
done
# the fakes object to nothing: every call checked, and stream order (a
# call that starts before another stream's use of its bytes ends, with no
# event between them, is a violation: fake_core.c "stream order")
expect_run "the fakes found no violation" 0 --stdout-grep '^0$' -- \
	sh -c "cat '$out'/*.txt | grep -c '^fakecuda:' || true"
# tiny at 70% is under its layer-wise floor: the script says so and goes on
expect_run "a budget no plan meets is said and skipped" 0 \
	--stdout-grep '^memplan: plan: budget [0-9.]+ MiB is below the layer-wise minimum' -- cat "$out/tiny.70.plan.txt"
expect_run "tiny's plans swap" 0 --stdout-grep '^[1-9]' -- \
	sh -c "cat '$out/tiny.90.plan.json' '$out/tiny.80.plan.json' | grep -c '\"action\": \"swap_out\"'"
expect_run "residual at 70% stalls for its swap-ins, as predicted" 0 \
	--stdout-grep '^ +stall +0\.0[0-9]*[1-9][0-9]* ms +0\.0[0-9]* ms +1\.000$' -- \
	sh -c "grep -A2 '^total' '$out/residual.70.timed.txt'"
expect_run "residual's rebuilt tensors match with real kernels" 0 \
	--stdout-grep '^data +every read checked: .*, [1-9][0-9]* recomputed tensors per iteration .*; nothing lost$' -- \
	cat "$out/residual.80.verify.txt"
# a failed run is a row saying why, and so is a report cut short: not a
# crash of the table
printf '{"format": "memplan-verify-report/1", "ok": false, "failed_action": 3, "violation": "schedule[3]: a |\\n b"}\n' \
	>"$out/tiny.70.verify.json"
printf '{"format": "memplan-verify-re' >"$out/tiny.60.verify.json"
expect_run "a failed report is a row" 0 \
	--stdout-grep '^\| tiny \| 70% \| real \|( - \|){11} no: schedule\[3\]: a / b \|$' -- \
	python3 tools/verify-table.py "$out"
expect_run "a report cut short is a row" 0 \
	--stdout-grep '^\| tiny \| 60% \| real \|( - \|){11} no: unreadable report \(.*\) \|$' -- \
	python3 tools/verify-table.py "$out"
done_testing
