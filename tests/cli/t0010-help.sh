#!/bin/sh
# Every subcommand's -h and --help: the usage that its option table makes
# (cli/options.c), and what follows it; an unknown option gets the usage
# alone, on stderr.  The golden files were written by the hand-made usage
# texts the tables replaced.
. "$(dirname "$0")/../lib.sh"
for c in check analyze plan capacity gen devices verify replan profile; do
	expect_run "$c -h" 0 --stdout "$c-help.out" -- memplan "$c" -h
	expect_run "$c --help" 0 --stdout "$c-help.out" -- memplan "$c" --help
	usage=$(sed -n '/^$/q; /^planners:/q; p' "$GOLDEN/$c-help.out")
	expect_run "$c --frob" 2 --stderr "memplan: $c: unknown or incomplete option '--frob'
$usage" -- memplan "$c" --frob
done
done_testing
