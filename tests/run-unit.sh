#!/bin/sh
# Run every unit-test binary given; print the total as "N passed, N failed".
pass=0; fail=0; bad=0
for t in "$@"; do
	out=$("$t" 2>&1); rc=$?
	printf '%s\n' "$out" | grep -v ' passed, .* failed$' || true
	line=$(printf '%s\n' "$out" | grep ' passed, .* failed$' | tail -n 1)
	p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
	f=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
	if [ $rc -ne 0 ]; then
		bad=1
		[ -z "$line" ] && { echo "$t: crashed (exit $rc)"; fail=$((fail + 1)); }
	fi
	echo "  $(basename "$t"): ${line:-no result}"
done
echo "unit: $pass passed, $fail failed"
[ $bad -eq 0 ] && [ $fail -eq 0 ]
