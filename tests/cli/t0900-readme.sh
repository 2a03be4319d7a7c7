#!/bin/sh
# README.md's tour is real output: regenerating it from docs/README.in with
# tools/readme.sh gives the committed file byte for byte.
. "$(dirname "$0")/../lib.sh"
expect_run "README.md is docs/README.in expanded" 0 -- sh -c "sh tools/readme.sh > '$TMP/README.md' && cmp -s README.md '$TMP/README.md'"
if ! cmp -s README.md "$TMP/README.md" 2>/dev/null; then
	diff README.md "$TMP/README.md" | head -20
fi
done_testing
