#!/bin/sh
# memplan profile: usage and bad input exit 2 before any GPU is asked for (a
# bad net is reported on every machine); where the CUDA driver reports no
# device (every CI machine) it exits 3 with "no CUDA device" and writes
# nothing.  On a machine with a GPU those checks are skipped with the reason,
# and the measurement itself is run.
. "$(dirname "$0")/../lib.sh"
USAGE='^usage: memplan profile NET.json -o FILE'

expect_run "help" 0 --stdout profile-help.out --stderr "" -- memplan profile --help
expect_run "listed in memplan --help" 0 --stdout-grep '^  profile +measure layer and conv algorithm times on this GPU$' -- \
	memplan --help
expect_run "no net" 2 --stderr-grep "$USAGE" -- memplan profile
expect_run "no net, only -o" 2 --stderr-grep "$USAGE" -- memplan profile -o "$TMP/m.json"
expect_run "two nets" 2 --stderr-grep "$USAGE" -- memplan profile examples/tiny.json examples/tiny.json -o "$TMP/m.json"
expect_run "missing -o" 2 --stderr "memplan: profile: -o FILE is required (where the measured net is written)" -- \
	memplan profile examples/tiny.json
expect_run "-o without a file" 2 --stderr-grep "^memplan: profile: unknown or incomplete option '-o'" -- \
	memplan profile examples/tiny.json -o
expect_run "bad --batches" 2 --stderr "memplan: --batches: unknown policy 'powerOfTwo' (pow2, all or full)" -- \
	memplan profile examples/tiny.json -o "$TMP/m.json" --batches powerOfTwo
expect_run "--batches without a policy" 2 --stderr-grep "^memplan: profile: unknown or incomplete option '--batches'" -- \
	memplan profile examples/tiny.json -o "$TMP/m.json" --batches
expect_run "iters 0" 2 --stderr "memplan: --iters: expected a whole number from 1 to 100000, got '0'" -- \
	memplan profile examples/tiny.json -o "$TMP/m.json" --iters 0
expect_run "warmup negative" 2 --stderr "memplan: --warmup: expected a whole number from 0 to 100000, got '-1'" -- \
	memplan profile examples/tiny.json -o "$TMP/m.json" --warmup -1
expect_run "unknown option" 2 --stderr-grep "^memplan: profile: unknown or incomplete option '--budget'" -- \
	memplan profile examples/tiny.json -o "$TMP/m.json" --budget 1G
expect_run "missing net file" 2 --stderr "memplan: $TMP/none.json: cannot open: No such file or directory" -- \
	memplan profile "$TMP/none.json" -o "$TMP/m.json"
printf '{"format": "memplan-net/1",' >"$TMP/trunc.json"
expect_run "truncated net" 2 \
	--stderr "memplan: $TMP/trunc.json: line 1, column 27: invalid JSON: string or '}' expected near end of file" -- \
	memplan profile "$TMP/trunc.json" -o "$TMP/m.json"
expect_run "malformed net" 2 --stderr "memplan: tests/bad/inputs-unknown.json: layers[2].inputs[0]: no layer named 'conv9'" -- \
	memplan profile tests/bad/inputs-unknown.json -o "$TMP/m.json"
expect_run "a plan, not a net" 2 --stderr-grep "^memplan: $TMP/p.json: " -- \
	sh -c "'$MEMPLAN' plan examples/chain.json --budget 64K -o '$TMP/p.json' >/dev/null && '$MEMPLAN' profile '$TMP/p.json' -o '$TMP/m.json'"
expect_run "-o in a missing directory" 2 \
	--stderr "memplan: profile: cannot write '$TMP/no/such/m.json': No such file or directory" -- \
	memplan profile examples/tiny.json -o "$TMP/no/such/m.json"
mkdir "$TMP/dir"
expect_run "-o is a directory" 2 --stderr "memplan: profile: cannot write '$TMP/dir': Is a directory" -- \
	memplan profile examples/tiny.json -o "$TMP/dir"
# a net for a GPU no backend runs on (no_verify: the AMD catalog entries)
sed 's/"latency_us": 100}/"latency_us": 100, "no_verify": true}/' examples/chain.json >"$TMP/amd.json"
expect_run "a net for a GPU without a backend" 2 \
	--stderr "memplan: profile: $TMP/amd.json: 'toy-link' is a GPU for capacity planning only: memplan has no verify backend for it (verify and profile run on CUDA GPUs)" -- \
	memplan profile "$TMP/amd.json" -o "$TMP/m.json"
memplan gen alexnet --batch 2 --device mi300x -o "$TMP/mi300x.json" >/dev/null 2>&1
expect_run "a net generated for mi300x" 2 --stderr-grep "^memplan: profile: $TMP/mi300x.json: 'mi300x' is a GPU for capacity planning only" -- \
	memplan profile "$TMP/mi300x.json" -o "$TMP/m.json"
expect_run "nothing written on bad input" 1 -- test -e "$TMP/m.json"

memplan verify --probe >"$TMP/probe.out" 2>/dev/null
if grep -q '^cuda .*; device 0: ' "$TMP/probe.out"; then
	skip "no CUDA device" "a CUDA device is present: $(grep '; device 0: ' "$TMP/probe.out")"
	if grep -qE '^cuda +backend: built in ' "$TMP/probe.out"; then
		memplan profile examples/tiny.json -o "$TMP/m.json" >"$TMP/gpu.out" 2>"$TMP/gpu.err"; rc=$?
		if [ $rc = 4 ] && grep -q 'not built yet' "$TMP/gpu.err"; then
			skip "no measurement" "$(cat "$TMP/gpu.err")"
		else
			expect_run "profile tiny on the GPU" 0 -- test $rc = 0
			expect_run "the measured net loads" 0 --stdout-grep '\(measured:' -- memplan check "$TMP/m.json"
		fi
	else
		expect_run "no CUDA backend" 3 --stderr "memplan: profile: this memplan was built without the CUDA backend" -- \
			memplan profile examples/tiny.json -o "$TMP/m.json"
	fi
else
	expect_run "no GPU" 3 --stderr-grep '^memplan: profile: no CUDA device: (no CUDA driver|the CUDA driver)' -- \
		memplan profile examples/tiny.json -o "$TMP/m.json"
	expect_run "no GPU, every option" 3 --stderr-grep '^memplan: profile: no CUDA device: ' -- \
		memplan profile examples/tiny.json -o "$TMP/m.json" --batches all --iters 3 --warmup 0
	memplan profile examples/tiny.json -o "$TMP/m.json" >"$TMP/nogpu.out" 2>/dev/null
	expect_run "no GPU: nothing on stdout" 0 -- test ! -s "$TMP/nogpu.out"
	expect_run "no GPU: nothing written" 1 -- test -e "$TMP/m.json"
	skip "no GPU" "profile measuring examples/tiny.json on a device and the result loading"
fi
done_testing
