#!/bin/sh
# memplan check on the bundled tiny example, table and JSON.
. "$(dirname "$0")/../lib.sh"
expect_run "check tiny" 0 --stdout-grep "valid memplan-net/1 'tiny'" -- memplan check examples/tiny.json
expect_run "check tiny json" 0 --stdout-grep '"parameters": 164298' -- memplan check examples/tiny.json --format json
expect_run "check no args" 2 --stderr-grep "usage: memplan check" -- memplan check
expect_run "unknown command" 2 --stderr "memplan: 'frobnicate' is not a command (see 'memplan --help')" -- memplan frobnicate
done_testing
