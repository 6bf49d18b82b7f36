#!/usr/bin/env bash
# tests/run.sh: runs every test (C unit tests, the ctypes client, tests/t*.sh end-to-end scripts)
# and ends with one line "N passed, N failed[, N skipped]". Each test prints TAP-like lines:
# "ok - ...", "not ok - ...", "skip - ...". A script that dies without saying "not ok" fails too.
set -u
cd "$(dirname "$0")/.."
export GPUCTL_BUILD=${GPUCTL_BUILD:-build}
pass=0 fail=0 skipped=0
only=${1:-}

run_one() {
	local name=$1; shift
	local out rc
	out=$("$@" 2>&1); rc=$?
	local p f s
	p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out"); s=$(grep -c '^skip ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		out+=$'\n'"not ok - $name exited with status $rc"
		f=1
	fi
	pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + s))
	if [ "$f" -gt 0 ] || [ -n "${VERBOSE:-}" ]; then
		printf '### %s\n%s\n' "$name" "$out"
	else
		printf '%-40s %3d ok%s\n' "$name" "$p" "$([ "$s" -gt 0 ] && echo ", $s skipped")"
	fi
}

if [ -z "$only" ] || [ "$only" = unit ]; then
	run_one unit-tests "$GPUCTL_BUILD/unit-tests"
fi
if [ -z "$only" ] || [ "$only" = client ]; then
	if command -v python3 >/dev/null; then
		run_one nvml-ctypes-client python3 tests/nvml_client.py "$GPUCTL_BUILD"
	else
		echo "skip - nvml-ctypes-client: python3 is not installed"; skipped=$((skipped + 1))
	fi
fi
for t in tests/t[0-9]*.sh; do
	case "$only" in ''|unit|client) ;; *) [[ $t == *"$only"* ]] || continue ;; esac
	[ "$only" = unit ] || [ "$only" = client ] && continue
	run_one "$(basename "$t" .sh)" bash "$t"
done
echo "$pass passed, $fail failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
[ "$fail" -eq 0 ]
