#!/bin/sh
# Every file memplan writes is whole or not there: plan -o and --trace,
# verify --report, analyze --svg, capacity --svg and gen -o go through a
# temporary file and a rename.  A write that fails (a full device, a file-size
# limit) exits 2, says so, leaves no file and no temporary file behind, and
# leaves a file already there as it was.  A report on stdout that cannot be
# written exits 2 and says so.  An output never replaces an input
# or another output, and names are data: quoted in CSV, escaped in SVG.
. "$(dirname "$0")/../lib.sh"

memplan plan examples/chain.json --budget 64K -o "$TMP/chain.plan.json" >/dev/null 2>&1 ||
	not_ok "a plan to verify" "memplan plan examples/chain.json failed"

# what, then the command with OUT where the output file goes
while IFS='|' read -r what cmd; do
	# a full device
	# shellcheck disable=SC2086
	expect_run "$what on /dev/full ($cmd)" 2 --stderr-grep "^memplan: $what: writing '/dev/full' failed: No space left on device$" -- \
		memplan $(echo "$cmd" | sed "s|OUT|/dev/full|")
	# a file-size limit of 1 block, over a file already there
	mkdir -p "$TMP/lim"
	rm -f "$TMP/lim/"*
	echo old >"$TMP/lim/out"
	args=$(echo "$cmd" | sed "s|OUT|$TMP/lim/out|")
	# shellcheck disable=SC2086
	(trap '' XFSZ; ulimit -f 1; exec "$MEMPLAN" $args) >/dev/null 2>"$TMP/err"; rc=$?
	if [ $rc != 2 ] || ! grep -q "^memplan: $what: writing '$TMP/lim/out' failed: File too large$" "$TMP/err"; then
		not_ok "$what under a file-size limit ($cmd)" "exit $rc" "$(cat "$TMP/err")"
	elif [ "$(cat "$TMP/lim/out")" != old ] || [ "$(ls "$TMP/lim")" != out ]; then
		not_ok "$what under a file-size limit ($cmd): the old file changed or a temporary file stayed" "$(ls "$TMP/lim")"
	else
		ok
	fi
	# and written whole, alone, with a new file's mode
	rm -f "$TMP/lim/"*
	# shellcheck disable=SC2086
	(umask 022; exec "$MEMPLAN" $args) >/dev/null 2>"$TMP/err"; rc=$?
	if [ $rc != 0 ] || [ ! -s "$TMP/lim/out" ] || [ "$(ls "$TMP/lim")" != out ] ||
		[ "$(stat -c %a "$TMP/lim/out")" != 644 ]; then
		not_ok "$what written ($cmd)" "exit $rc, $(ls -l "$TMP/lim")" "$(cat "$TMP/err")"
	else
		ok
	fi
done <<EOF_CASES
-o|plan examples/tiny.json --budget 64M -o OUT
--trace|plan examples/tiny.json --budget 64M --trace OUT
--report|verify $TMP/chain.plan.json --iters 1 --warmup 0 --report OUT
--svg|analyze examples/tiny.json --svg OUT
--svg|capacity examples/tiny.json --gpu 1G --svg OUT
gen|gen vgg16 --batch 2 -o OUT
EOF_CASES
# a report on stdout that cannot be written (a full device) exits 2 and says
# so, where it exited 0 with the report lost
while IFS='|' read -r want cmd; do
	# shellcheck disable=SC2086
	"$MEMPLAN" $cmd >/dev/full 2>"$TMP/err"; rc=$?
	if [ $rc != "$want" ] || ! grep -qx "memplan: writing standard output failed: No space left on device" "$TMP/err"; then
		not_ok "stdout on /dev/full ($cmd)" "exit $rc" "$(cat "$TMP/err")"
	else
		ok
	fi
done <<EOF_CASES
2|analyze examples/tiny.json
2|analyze examples/tiny.json --format json
2|analyze examples/tiny.json --format csv --steps
2|plan examples/tiny.json --budget 64M
2|capacity examples/tiny.json --gpu 1G
2|--help
2|--version
2|plan --help
2|gen vgg16 --batch 2
EOF_CASES
"$MEMPLAN" analyze examples/tiny.json >"$TMP/ok.txt" 2>"$TMP/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$TMP/err" ] && [ -s "$TMP/ok.txt" ]; then ok; else not_ok "stdout to a file: exit 0, nothing on stderr" "exit $rc" "$(cat "$TMP/err")"; fi

# an output never replaces an input or another output
memplan plan examples/chain.json --budget 64K -o "$TMP/c.plan.json" >/dev/null 2>&1
cp examples/tiny.json "$TMP/n.json"
expect_run "-o and --trace one file" 2 --stderr "memplan: plan: -o and --trace both name '$TMP/x.json'" -- \
	memplan plan examples/tiny.json --budget 64M -o "$TMP/x.json" --trace "$TMP/x.json"
expect_run "-o over the net" 2 --stderr "memplan: plan: '$TMP/n.json' is the net it reads: write the plan elsewhere" -- \
	memplan plan "$TMP/n.json" --budget 64M -o "$TMP/n.json"
if cmp -s "$TMP/n.json" examples/tiny.json; then ok; else not_ok "the net read is intact"; fi
expect_run "--report over the plan" 2 --stderr "memplan: --report: '$TMP/../$(basename "$TMP")/c.plan.json' is the plan it verifies: write the report elsewhere" -- \
	memplan verify "$TMP/c.plan.json" --report "$TMP/../$(basename "$TMP")/c.plan.json"

# names are data: CSV fields quoted (RFC 4180), XML text escaped
expect_run "csv quotes a field with a comma and a quote" 0 --stdout-grep '^2,forward,"c,o""nv<1>&\.fwd",[0-9]' -- \
	memplan analyze tests/data/odd-names.json --format csv --steps
memplan capacity tests/data/odd-names.json --gpu 1G --svg "$TMP/odd.svg" >/dev/null 2>&1
if grep -q 'Throughput against batch: tiny &lt;odd&gt; &amp; &quot;names&quot; on 1G</text>' "$TMP/odd.svg" &&
	! grep -q '<odd>' "$TMP/odd.svg"; then ok; else not_ok "capacity --svg escapes its title" "$(grep -o 'Throughput[^/]*' "$TMP/odd.svg")"; fi
memplan analyze tests/data/odd-names.json --svg "$TMP/odd2.svg" >/dev/null 2>&1
if ! grep -q '<odd>' "$TMP/odd2.svg"; then ok; else not_ok "analyze --svg escapes the net's name"; fi
done_testing
