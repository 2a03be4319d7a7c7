# Shared by tests/cli/t*.sh (after git's t/test-lib.sh): each test runs a
# memplan command and compares stdout, stderr and the exit status exactly.
# Usage in a test file:
#   . "$(dirname "$0")/../lib.sh"
#   expect_run NAME EXIT_STATUS [--stdout FILE|--stdout-grep RE] [--stderr TEXT] -- memplan args...
#   skip_all "reason"          (prints and exits 0 counting as skipped)
#   done_testing
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
MEMPLAN=${MEMPLAN:-$TOP/memplan}
GOLDEN=$TOP/tests/golden
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
t_pass=0; t_fail=0; t_skip=0
cd "$TOP"

memplan() { "$MEMPLAN" "$@"; }

ok() { t_pass=$((t_pass + 1)); }
not_ok() { t_fail=$((t_fail + 1)); echo "not ok - $1"; shift; [ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/    /'; return 0; }

# expect_run NAME STATUS [--stdout GOLDEN_FILE] [--stdout-grep RE] [--stderr TEXT] [--stderr-grep RE] -- CMD...
expect_run() {
	name=$1; want=$2; shift 2
	gold=""; sgrep=""; err=""; egrep_=""; errset=0
	while [ "$1" != "--" ]; do
		case $1 in
		--stdout) gold=$2; shift 2 ;;
		--stdout-grep) sgrep=$2; shift 2 ;;
		--stderr) err=$2; errset=1; shift 2 ;;
		--stderr-grep) egrep_=$2; shift 2 ;;
		*) echo "expect_run: bad option $1"; exit 2 ;;
		esac
	done
	shift
	"$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
	if [ "$rc" != "$want" ]; then
		not_ok "$name" "exit status $rc, expected $want" "stderr: $(head -c 600 "$TMP/err")"; return
	fi
	if [ -n "$gold" ]; then
		if [ "${UPDATE_GOLDEN:-}" = 1 ]; then cp "$TMP/out" "$GOLDEN/$gold"; fi
		if ! cmp -s "$TMP/out" "$GOLDEN/$gold"; then
			not_ok "$name" "stdout differs from tests/golden/$gold:" "$(diff "$GOLDEN/$gold" "$TMP/out" | head -20)"; return
		fi
	fi
	if [ -n "$sgrep" ] && ! grep -q -E -- "$sgrep" "$TMP/out"; then
		not_ok "$name" "stdout does not match /$sgrep/:" "$(head -5 "$TMP/out")"; return
	fi
	if [ $errset = 1 ] && [ "$(cat "$TMP/err")" != "$err" ]; then
		not_ok "$name" "stderr: $(cat "$TMP/err")" "expected: $err"; return
	fi
	if [ -n "$egrep_" ] && ! grep -q -E -- "$egrep_" "$TMP/err"; then
		not_ok "$name" "stderr does not match /$egrep_/:" "$(head -5 "$TMP/err")"; return
	fi
	ok
}

skip() { t_skip=$((t_skip + 1)); echo "skip - $1: $2"; }

done_testing() {
	echo "$(basename "$0" .sh): $t_pass passed, $t_fail failed, $t_skip skipped"
	[ $t_fail -eq 0 ]
}
