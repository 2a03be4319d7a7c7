#!/bin/sh
# Expand docs/README.in into README.md: every line "@run CMD" becomes
# "    $ CMD" followed by CMD's real output, indented; "@run-quiet CMD" runs CMD
# and shows only the command; "@tail N CMD" shows the last N lines.  Commands
# run in a scratch directory holding ./memplan, examples/ and tests/data/, so
# the tour in README.md is always what memplan prints (tests/cli/t0900 checks).
# Usage: sh tools/readme.sh > README.md
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$top/memplan" "$work/memplan"
ln -s "$top/examples" "$work/examples"
mkdir -p "$work/tests" && ln -s "$top/tests/data" "$work/tests/data"
while IFS= read -r line; do
	case $line in
	"@run "*)
		cmd=${line#@run }
		printf '    $ %s\n' "$cmd"
		(cd "$work" && sh -c "$cmd" 2>&1) | sed 's/^/    /; s/ *$//'
		;;
	"@run-quiet "*)
		cmd=${line#@run-quiet }
		printf '    $ %s\n' "$cmd"
		(cd "$work" && sh -c "$cmd" >/dev/null 2>&1)
		;;
	"@head "*|"@tail "*)
		end=${line%% *}
		end=${end#@}
		rest=${line#@* }
		n=${rest%% *}
		cmd=${rest#* }
		printf '    $ %s\n' "$cmd"
		[ "$end" = tail ] && printf '    ...\n'
		(cd "$work" && sh -c "$cmd" 2>&1) | "$end" -n "$n" | sed 's/^/    /; s/ *$//'
		[ "$end" = head ] && printf '    ...\n'
		;;
	"@include "*)
		f=${line#@include }
		[ -f "$top/$f" ] && grep -v '^<!--\|^to be merged\|^README.md.  The output' "$top/$f"
		;;
	*)
		printf '%s\n' "$line"
		;;
	esac
done < "$top/docs/README.in"
