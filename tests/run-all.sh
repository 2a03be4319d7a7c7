#!/bin/sh
# The whole suite: unit tests then CLI tests, with one closing total.
top=$(cd "$(dirname "$0")/.." && pwd)
u=$(sh "$top/tests/run-unit.sh" "$@"); urc=$?
printf '%s\n' "$u"
c=$(sh "$top/tests/run-cli.sh"); crc=$?
printf '%s\n' "$c"
sum() { printf '%s\n' "$1" | tail -n 1 | sed -n "s/.* \([0-9]*\) $2.*/\1/p"; }
p=$(( $(sum "$u" passed) + $(sum "$c" passed) ))
f=$(( $(sum "$u" failed) + $(sum "$c" failed) ))
s=$(sum "$c" skipped)
echo "total: $p passed, $f failed, ${s:-0} skipped"
[ $urc -eq 0 ] && [ $crc -eq 0 ]
