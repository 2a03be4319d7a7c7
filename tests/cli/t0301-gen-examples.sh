#!/bin/sh
# The generated examples: regenerating them gives byte-identical files, and
# 'memplan analyze' and 'memplan check' run on every one.  (The strategy
# ordering on every model is checked in tests/unit/test_zoo.c.)
. "$(dirname "$0")/../lib.sh"
mkdir "$TMP/ex"
if MEMPLAN="$MEMPLAN" sh tools/gen-examples.sh "$TMP/ex" 2>"$TMP/gen.err"; then ok; else
	not_ok "tools/gen-examples.sh" "$(cat "$TMP/gen.err")"; fi
for f in $(sh tools/gen-examples.sh --list | cut -d' ' -f1); do
	if cmp -s "examples/$f.json" "$TMP/ex/$f.json"; then ok; else
		not_ok "examples/$f.json is not what tools/gen-examples.sh writes (run it and commit)" \
			"$(cmp "examples/$f.json" "$TMP/ex/$f.json" 2>&1)"; fi
	expect_run "check $f" 0 --stdout-grep '"time_source": "roofline:v100-16g",' -- memplan check "examples/$f.json" --format json
	expect_run "analyze $f" 0 --stdout-grep '^recompute +[0-9.]+ [KMG]iB' -- memplan analyze "examples/$f.json"
done
expect_run "check vgg16-b64" 0 --stdout-grep '"parameters": 138357544,' -- memplan check examples/vgg16-b64.json --format json
expect_run "check resnet152-b32" 0 --stdout-grep '"parameters": 60192808,' -- memplan check examples/resnet152-b32.json --format json
expect_run "check inception-v4-b32" 0 --stdout-grep '"parameters": 42679816,' -- memplan check examples/inception-v4-b32.json --format json
expect_run "check densenet121-b32" 0 --stdout-grep '"parameters": 7978856,' -- memplan check examples/densenet121-b32.json --format json
expect_run "check bert-base" 0 --stdout-grep '"parameters": 110106428,' -- memplan check examples/bert-base.json --format json
done_testing
