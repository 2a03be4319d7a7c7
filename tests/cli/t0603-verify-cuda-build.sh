#!/bin/sh
# The CUDA backend in the build (verify/backend_cuda.cu, built when the Makefile
# finds nvcc): `memplan verify --probe` says whether this memplan has it.  With
# it and no device, --device cuda exits 3 with "no CUDA device" before reading
# the plan or the allocator.  The checks that need a GPU run only where the
# driver reports one, and print a visible skip line everywhere else.
. "$(dirname "$0")/../lib.sh"
LOOSE="--tolerance-time 100000 --tolerance-peak 100"
memplan plan examples/chain.json --budget 13000 -o "$TMP/p.json" >/dev/null
memplan plan examples/chain.json --budget 64K -o "$TMP/p64.json" >/dev/null

memplan verify --probe >"$TMP/probe.out" 2>"$TMP/probe.err"
if grep -qE '^cuda +backend: built in ' "$TMP/probe.out"; then
	expect_run "probe says the backend is built in" 0 \
		--stdout-grep '^cuda +backend: built in \(CUDA runtime [0-9]+\.[0-9]+; cuDNN and cuBLAS loaded when a GPU runs\)$' -- \
		cat "$TMP/probe.out"
	backend=1
else
	expect_run "probe says the backend is not built" 0 \
		--stdout-grep '^cuda +backend: not in this build \(nvcc not found, or a sanitizer build\)$' -- \
		cat "$TMP/probe.out"
	skip "no CUDA backend" "this memplan was built without nvcc (or with sanitizers): t0602 covers --device cuda"
	backend=0
fi

if grep -q '^cuda .*; device 0: ' "$TMP/probe.out"; then
	gpu=1
else
	gpu=0
fi

if [ $backend = 1 ] && [ $gpu = 0 ]; then
	expect_run "device cuda without a device" 3 --stderr "memplan: verify: no CUDA device" -- \
		memplan verify "$TMP/p.json" --device cuda
	expect_run "device cuda without a device, pool" 3 --stderr "memplan: verify: no CUDA device" -- \
		memplan verify "$TMP/p.json" --device cuda --alloc pool
	expect_run "device cuda without a device, bad plan" 3 --stderr "memplan: verify: no CUDA device" -- \
		memplan verify "$TMP/none.json" --device cuda
	expect_run "probe without a device" 3 --stderr "memplan: verify: no CUDA device" -- memplan verify --probe
fi

if [ $backend = 1 ] && [ $gpu = 1 ]; then
	expect_run "probe measures the link" 0 \
		--stdout-grep '^cuda +pinned copies of [0-9.]+ [MG]iB, median of 5: h2d [0-9.]+ GB/s, d2h [0-9.]+ GB/s$' -- \
		memplan verify --probe
	expect_run "chain on the GPU: no data lost" 0 \
		--stdout-grep '^data +every read checked: [1-9][0-9]* reads, [1-9][0-9]* copies, .*; nothing lost$' -- \
		memplan verify "$TMP/p.json" --device cuda --iters 2 $LOOSE
	expect_run "chain on the GPU: backend line" 0 \
		--stdout-grep "^backend +cuda: .*, a [0-9.]+ KiB arena at the plan's offsets \(cudaMalloc\)" -- \
		memplan verify "$TMP/p.json" --device cuda --iters 1 $LOOSE
	expect_run "chain on the GPU: the report" 0 -- \
		memplan verify "$TMP/p.json" --device cuda --iters 1 $LOOSE --report "$TMP/r.json"
	expect_run "the report names the device" 0 --stdout-grep '^ "device": "cuda",?$' -- cat "$TMP/r.json"
	# the first-fit pool over one cudaMalloc: its high-water mark, and a
	# pool the fragments leave too small is a violation, worded as on the host
	expect_run "pool on the GPU: backend line" 0 \
		--stdout-grep "^backend +cuda: .*, a 64\.0 KiB pool of 1024-byte blocks, first fit \(SuperNeurons 3\.2\.1\) in one cudaMalloc, " -- \
		memplan verify "$TMP/p64.json" --device cuda --alloc pool --iters 1 $LOOSE
	expect_run "pool on the GPU: high-water" 0 \
		--stdout-grep '^pool +high-water [0-9.]+ KiB: [0-9.]+x the plan.s arena [0-9.]+ KiB, [0-9.]+x the live peak [0-9.]+ KiB$' -- \
		memplan verify "$TMP/p64.json" --device cuda --alloc pool --iters 2 $LOOSE
	expect_run "pool on the GPU: too small" 1 \
		--stderr-grep "^memplan: verify: schedule\[[0-9]+\] (alloc|swap_in) '[^']+': the pool \([0-9]+ bytes in 1024-byte blocks\) has no free run of [0-9]+ blocks" -- \
		memplan verify "$TMP/p.json" --device cuda --alloc pool --iters 1 $LOOSE
	# cudaMallocAsync: data intact, the memory pool's high-water marks (the
	# reserved one is the peak, in the driver's granularity: far above a toy
	# net's prediction)
	ASYNC="--tolerance-time 100000 --tolerance-peak 1000000"
	expect_run "async on the GPU: no data lost" 0 \
		--stdout-grep '^data +every read checked: [1-9][0-9]* reads, [1-9][0-9]* copies, .*; nothing lost$' -- \
		memplan verify "$TMP/p.json" --device cuda --alloc async --iters 2 $ASYNC
	expect_run "async on the GPU: high-water" 0 \
		--stdout-grep '^async +reserved high-water [0-9.]+ [KMG]iB: [0-9.]+x the plan.s arena .*; used high-water [0-9.]+ [KMG]?i?B$' -- \
		memplan verify "$TMP/p.json" --device cuda --alloc async --iters 2 $ASYNC
	expect_run "async on the GPU: the report" 0 -- \
		memplan verify "$TMP/p.json" --device cuda --alloc async --iters 1 $ASYNC --report "$TMP/ra.json"
	expect_run "the report has the reserved high-water" 0 --stdout-grep '^  "reserved_high_water_bytes": [1-9][0-9]*,$' -- \
		cat "$TMP/ra.json"
	# a plan for a GPU no backend runs on (no_verify: the AMD catalog entries)
	sed 's/"latency_us": 100}/"latency_us": 100, "no_verify": true}/' examples/chain.json >"$TMP/amd.json"
	memplan plan "$TMP/amd.json" --budget 64K -o "$TMP/amd-p.json" >/dev/null
	expect_run "a plan for a GPU without a backend" 2 \
		--stderr "memplan: verify: $TMP/amd-p.json: 'toy-link' is a GPU for capacity planning only: memplan has no verify backend for it (verify and profile run on CUDA GPUs); --device host still checks the schedule" -- \
		memplan verify "$TMP/amd-p.json" --device cuda --iters 1 $LOOSE
else
	skip "no GPU" "verify --probe measuring pinned h2d/d2h bandwidth on a device"
	skip "no GPU" "verify --device cuda running examples/chain.json with every read checked"
	skip "no GPU" "verify --device cuda --report naming the device"
	skip "no GPU" "verify --device cuda --alloc pool: high-water, and a pool too small is a violation"
	skip "no GPU" "verify --device cuda --alloc async: data intact, reserved and used high-water"
	skip "no GPU" "verify --device cuda refusing a plan for a GPU without a backend (no_verify)"
fi
done_testing
