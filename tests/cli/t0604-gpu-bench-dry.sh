#!/bin/sh
# tools/gpu-bench.sh end to end, as a lent GPU machine runs it, with the
# gpu-dry memplan (the Makefile's GPU_DRY: the CUDA backend built by the
# host compiler against tests/fakecuda, with a fake driver): probe, profile,
# plan at two budgets, verify with real kernels and timed, and the table.
# It catches what would waste a GPU session's few minutes: a script or
# report error, or a verify that fails on the device for a reason the host
# backend does not share (real kernels check only their first iteration: a
# swapped tensor read after its swap-in in a later one was taken for
# unwritten, and every swapping plan failed from its second iteration).
. "$(dirname "$0")/../lib.sh"
if [ -z "${GPU_DRY:-}" ] || [ ! -x "$GPU_DRY" ]; then
	skip "gpu-bench dry run" "no gpu-dry memplan (make test builds it where the CUDA, cuDNN and cuBLAS headers are)"
	done_testing
	exit
fi
out=$TMP/gpu
expect_run "gpu-bench.sh runs through" 0 --stdout-grep '^\| tiny \| 80% \| timed \|' -- \
	env MEMPLAN="$GPU_DRY" NETS=examples/tiny.json PCTS="90 80" sh tools/gpu-bench.sh "$out"
expect_run "the probe finds the fake device" 0 --stdout-grep '^cuda +device 0: fakecuda, 80\.0 GiB total' -- \
	cat "$out/probe.txt"
expect_run "profile measured the net on it" 0 --stdout-grep '"time_source": "measured:fakecuda"' -- \
	cat "$out/tiny.measured.json"
# four runs, each measured and within its tolerances
expect_run "four rows in the table" 0 --stdout-grep '^4$' -- sh -c "grep -c '^| tiny |' '$out/verify-table.md'"
expect_run "every run ok" 0 --stdout-grep '^4$' -- sh -c "grep -c ' yes |\$' '$out/verify-table.md'"
for pct in 90 80; do
	expect_run "verify with real kernels at $pct%" 0 --stdout-grep '^data +every read checked: .*; nothing lost$' -- \
		cat "$out/tiny.$pct.verify.txt"
	expect_run "the plan at $pct% swaps" 0 --stdout-grep '^[1-9]' -- \
		sh -c "grep -c '\"action\": \"swap_out\"' '$out/tiny.$pct.plan.json'"
done
# a failed run is a row saying why, not a crash of the table
printf '{"format": "memplan-verify-report/1", "ok": false, "failed_action": 3, "violation": "schedule[3]: a | b"}\n' \
	>"$out/tiny.70.verify.json"
expect_run "a failed report is a row" 0 \
	--stdout-grep '^\| tiny \| 70% \| real \|( - \|){11} no: schedule\[3\]: a / b \|$' -- \
	python3 tools/verify-table.py "$out"
done_testing
