#!/bin/sh
# memplan verify --device cuda and --probe: exit 3 with "no CUDA device" where
# the CUDA driver reports none (every CI machine); on a machine with a GPU the
# tests that need its absence are skipped with the reason.
. "$(dirname "$0")/../lib.sh"
LOOSE="--tolerance-time 100000"   # not testing time here; CI hosts are noisy
memplan plan examples/chain.json --budget 64K -o "$TMP/p.json" >/dev/null

memplan verify --probe >"$TMP/probe.out" 2>"$TMP/probe.err"; rc=$?
if grep -q '^cuda .*; device 0: ' "$TMP/probe.out"; then
	skip "no CUDA device" "a CUDA device is present: $(grep '^cuda' "$TMP/probe.out" | head -n 1)"
	expect_run "probe names the device" "$rc" --stdout-grep '^cuda +[0-9]+ devices?; device 0: ' -- memplan verify --probe
else
	expect_run "probe" 3 --stderr "memplan: verify: no CUDA device" \
		--stdout-grep '^cuda +no CUDA device: (no CUDA driver|the CUDA driver)' -- memplan verify --probe
	expect_run "probe host line" 3 --stdout-grep '^host +available: [0-9]+ CPUs, [0-9.]+ [MGT]iB memory' -- \
		memplan verify --probe
	expect_run "device cuda" 3 --stderr "memplan: verify: no CUDA device" -- \
		memplan verify "$TMP/p.json" --device cuda
	expect_run "device cuda, any allocator" 3 --stderr "memplan: verify: no CUDA device" -- \
		memplan verify "$TMP/p.json" --device cuda --alloc async --iters 3
	expect_run "device cuda, timed kernels" 3 --stderr "memplan: verify: no CUDA device" -- \
		memplan verify "$TMP/p.json" --device cuda --compute timed
	memplan verify "$TMP/p.json" --device cuda >"$TMP/cuda.out" 2>/dev/null
	expect_run "device cuda prints nothing on stdout" 0 -- test ! -s "$TMP/cuda.out"
fi
expect_run "device host is the default" 0 --stdout-grep '^backend +host: ' -- \
	memplan verify "$TMP/p.json" --iters 1 $LOOSE
# a plan for a GPU no backend runs on (the AMD catalog entries): the host
# backend still checks its schedule (t0603: --device cuda refuses it)
sed 's/"latency_us": 100}/"latency_us": 100, "no_verify": true}/' examples/chain.json >"$TMP/amd.json"
memplan plan "$TMP/amd.json" --budget 64K -o "$TMP/amd-p.json" >/dev/null
expect_run "device host on a plan for a GPU without a backend" 0 \
	--stdout-grep "^plan +$TMP/amd-p.json: net 'chain', planner [a-z-]+, device toy-link \(capacity planning only: no verify backend\)$" -- \
	memplan verify "$TMP/amd-p.json" --iters 1 $LOOSE
done_testing
