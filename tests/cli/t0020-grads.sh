#!/bin/sh
# "grads": "keep" (memplan-net(5)): parameter gradients stay allocated across
# iterations, as PyTorch's .grad under zero_grad() before torch 2.0, and each
# backward makes a new gradient that L.accumulate adds into them.
# tests/data/grads-keep.json by hand: x.out 1024 B; fc's weight 65536 B and
# bias 256 B (65792 B of parameters); fc.out, loss.out, fc.dout 256 B each.
#   set_to_none: the peak is fc.bwd: parameters, their new gradients, x.out
#                (fc saves its input) and fc.dout: 2 * 65792 + 1024 + 256 = 132864
#   keep:        the same plus the kept .grad: 3 * 65792 + 1024 + 256 = 198656,
#                and from the first step on parameters and .grad: 2 * 65792 + 1024
. "$(dirname "$0")/../lib.sh"
sed 's/"grads": "keep"/"grads": "set_to_none"/' tests/data/grads-keep.json >"$TMP/none.json"
sed '/"grads"/s/, "grads": "keep"//' tests/data/grads-keep.json >"$TMP/absent.json"
expect_run "keep: peak" 0 --stdout-grep '"peak_bytes": 198656' -- \
	memplan analyze tests/data/grads-keep.json --strategy liveness --format json
expect_run "keep: the first step holds parameters and .grad" 0 --stdout-grep '^ +1 forward +x\.fwd +129\.5 KiB' -- \
	memplan analyze tests/data/grads-keep.json --strategy liveness --steps
expect_run "keep: accumulate after the backward" 0 --stdout-grep '^ +6 backward +fc\.accumulate ' -- \
	memplan analyze tests/data/grads-keep.json --strategy liveness --steps
expect_run "set_to_none: peak" 0 --stdout-grep '"peak_bytes": 132864' -- \
	memplan analyze "$TMP/none.json" --strategy liveness --format json
expect_run "absent is set_to_none" 0 --stdout-grep '"peak_bytes": 132864' -- \
	memplan analyze "$TMP/absent.json" --strategy liveness --format json
# a plan keeps .grad across iterations run back to back, in the arena and in the pool
memplan plan tests/data/grads-keep.json --budget 1M -o "$TMP/p.json" >/dev/null
expect_run "keep: verify, arena" 0 --stdout-grep 'nothing lost' -- \
	memplan verify "$TMP/p.json" --iters 3 --warmup 1 --tolerance-peak 0
expect_run "keep: verify, pool" 0 --stdout-grep 'nothing lost' -- \
	memplan verify "$TMP/p.json" --iters 3 --warmup 1 --alloc pool --tolerance-peak 1000
# freeing a kept .grad loses it
{ head -n -2 "$TMP/p.json" | sed '$s/}$/},/'
  printf '  %s\n ]\n}\n' '{"action": "free", "tensor": "fc.param0.grad", "stream": "compute", "start_ms": 6.0, "end_ms": 6.0, "resident_bytes": 66048}'
} >"$TMP/lost.json"
expect_run "keep: a freed .grad is lost" 1 --stderr "memplan: verify: schedule[23] free 'fc.param0.grad': 'fc.param0.grad' is lost: freed, and the next iteration expects it on the device from schedule[2] on (parameters, optimizer state, kept gradients and inputs outlive the iteration)" -- \
	memplan verify "$TMP/lost.json" --iters 2 --warmup 0
done_testing
