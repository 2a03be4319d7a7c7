#!/bin/sh
# Run every tests/cli/t*.sh; print the total as "N passed, N failed, N skipped".
top=$(cd "$(dirname "$0")/.." && pwd)
pass=0; fail=0; skip=0; bad=0
for t in "$top"/tests/cli/t*.sh; do
	out=$(sh "$t" 2>&1); rc=$?
	printf '%s\n' "$out" | grep -v ' passed, .* failed' || true
	line=$(printf '%s\n' "$out" | grep ' passed, .* failed' | tail -n 1)
	p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
	f=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	s=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
	[ $rc -ne 0 ] && bad=1 && [ -z "$line" ] && { echo "$t: died (exit $rc)"; fail=$((fail + 1)); }
	echo "  $(basename "$t"): ${line:-no result}"
done
echo "cli: $pass passed, $fail failed, $skip skipped"
[ $bad -eq 0 ] && [ $fail -eq 0 ]
