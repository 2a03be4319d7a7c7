#!/bin/sh
# memplan check on the bundled tiny example, table and JSON.
. "$(dirname "$0")/../lib.sh"
expect_run "check tiny" 0 --stdout-grep "valid memplan-net/1 'tiny'" -- memplan check examples/tiny.json
expect_run "check tiny json" 0 --stdout-grep '"parameters": 164298' -- memplan check examples/tiny.json --format json
expect_run "check no args" 2 --stderr-grep "usage: memplan check" -- memplan check
expect_run "unknown command" 2 --stderr "memplan: 'frobnicate' is not a command (see 'memplan --help')" -- memplan frobnicate
# layers may read layers listed after them (memplan-net(5)): they are
# lowered in dependency order, the in-place chain f -> d -> r included, and
# run as the same net in file order does (the golden is the analysis of the
# layers of tests/data/out-of-order.json sorted x, f, d, r, g, loss; before,
# r and g read x's output and f ran last)
expect_run "out of order: as in order" 0 --stdout out-of-order-steps.csv -- \
	memplan analyze tests/data/out-of-order.json --strategy liveness --steps --format csv
expect_run "out of order: f before r" 0 --stdout-grep '^4,forward,r\.fwd,1568,' -- \
	memplan analyze tests/data/out-of-order.json --strategy liveness --steps --format csv
expect_run "out of order: plan" 0 -- memplan plan tests/data/out-of-order.json --budget 1M -o "$TMP/ooo.json"
expect_run "out of order: verify" 0 --stdout-grep 'nothing lost' -- memplan verify "$TMP/ooo.json" --iters 2
# ops that update one tensor in place run in file order: relu_ waits for
# add_ (tests/data/inplace-order.json: relu_ is ready first; before, it ran
# before the identity was added)
expect_run "in-place updaters in file order" 0 --stdout-grep '^3,forward,add_,' -- \
	memplan analyze tests/data/inplace-order.json --strategy liveness --steps --format csv
expect_run "in-place updaters: relu_ after add_" 0 --stdout-grep '^4,forward,relu_,' -- \
	memplan analyze tests/data/inplace-order.json --strategy liveness --steps --format csv
done_testing
