#!/usr/bin/env bash
# tests/run.sh [WORD...]: runs the test scripts concurrently: the C unit tests, the ctypes NVML
# client and every tests/t*.sh (only those whose name contains a WORD, when given). Each prints
# TAP: a plan "1..N" and a line per check, "ok - ...", "not ok - ...", "ok - ... # SKIP why".
# A script is held to its plan: one that dies early, runs more checks than it planned or exits
# non-zero fails, whatever it printed. One line per script as it finishes (its whole output when
# it failed, or with VERBOSE=1), then exactly one last line: "N passed, N failed[, N skipped]".
#   TEST_JOBS=N      at most N scripts at once (default: all; they mostly wait on events)
#   TEST_TIMEOUT=S   a script still running after S seconds is stopped and fails (default 300)
set -u
cd "$(dirname "$0")/.."
export GPUCTL_BUILD=${GPUCTL_BUILD:-build}
# The scripts need the test binaries beside gpuctl; without them every script would fail slowly,
# waiting for what cannot start. `make test` builds them (`make` alone builds gpuctl only).
for f in gpuctl unit-tests workload sleeper fakenvml/libnvidia-ml.so.1; do
	if [ ! -e "$GPUCTL_BUILD/$f" ]; then
		echo "tests/run.sh: $GPUCTL_BUILD/$f is missing: run \`make test\` (or \`make asan\` for build-asan) to build the test binaries" >&2
		exit 2
	fi
done
OUT=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-run.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
pass=0 fail=0 skipped=0 running=0
declare -A name_of start_of

# wanted NAME [WORD...]: no words, or one of them is part of NAME.
wanted() {
	local n=$1 w; shift
	[ $# -eq 0 ] && return 0
	for w in "$@"; do [[ $n == *"$w"* ]] && return 0; done
	return 1
}

# Counts one finished script's TAP against its plan and prints its line.
report() {
	local name=$1 rc=$2 secs=$3 tap=$OUT/$1.tap
	local planned ran p f s why=""
	planned=$(grep -cE '^1\.\.[0-9]+' "$tap")
	ran=$(grep -cE '^(not )?ok\b' "$tap")
	f=$(grep -cE '^not ok\b' "$tap")
	s=$(grep -cE '^ok\b.*# *[Ss][Kk][Ii][Pp]' "$tap")
	p=$((ran - f - s))
	if [ "$planned" -ne 1 ]; then
		why="no plan (or more than one): it died early?"
		f=$((f + 1))
	else
		planned=$(grep -oE '^1\.\.[0-9]+' "$tap" | cut -d. -f3)
		if [ "$ran" -lt "$planned" ]; then
			why="planned $planned checks, ran $ran: it died early?"
			f=$((f + planned - ran))
		elif [ "$ran" -gt "$planned" ]; then
			why="planned $planned checks, ran $ran"
			f=$((f + 1))
		fi
	fi
	if [ "$rc" -ne 0 ] && [ -z "$why" ] && [ "$(grep -cE '^not ok\b' "$tap")" -eq 0 ]; then
		why="exited with status $rc$([ "$rc" -eq 124 ] && echo " (stopped after ${TEST_TIMEOUT:-300} s)")"
		f=$((f + 1))
	fi
	pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + s))
	if [ "$f" -gt 0 ] || [ -n "${VERBOSE:-}" ]; then
		printf '### %s (%s s)\n' "$name" "$secs"
		cat "$tap"
		[ -n "$why" ] && echo "not ok - $name: $why"
	else
		printf '%-28s %4d ok%-14s %6s s\n' "$name" "$p" "$([ "$s" -gt 0 ] && echo ", $s skipped")" "$secs"
	fi
}

finish_one() {
	local pid rc
	wait -n -p pid
	rc=$?
	local now; now=$(date +%s%N)
	kill -- "-$pid" 2>/dev/null   # whatever the script left running in its process group
	local ns=$((now - start_of[$pid]))
	report "${name_of[$pid]}" "$rc" "$(printf '%d.%02d' $((ns / 1000000000)) $((ns / 10000000 % 100)))"
	unset "name_of[$pid]"
	running=$((running - 1))
}

# start NAME CMD...: in the background, under timeout (which gives it its own process group).
start() {
	local name=$1; shift
	wanted "$name" "${WORDS[@]}" || return 0
	while [ "${TEST_JOBS:-0}" -gt 0 ] && [ "$running" -ge "${TEST_JOBS:-0}" ]; do finish_one; done
	timeout -k 5 "${TEST_TIMEOUT:-300}" "$@" >"$OUT/$name.tap" 2>&1 </dev/null &
	name_of[$!]=$name
	start_of[$!]=$(date +%s%N)
	running=$((running + 1))
}

WORDS=("$@")
t0=$(date +%s%N)
# In reverse order: the later scripts (leases, kill, exporter) wait longest, so with TEST_JOBS
# they start first and the suite's wall time stays near the longest script's.
for t in $(ls tests/t[0-9]*.sh | xargs -n1 basename | sort -t- -k1,1r); do
	start "${t%.sh}" bash "tests/$t"
done
start unit-tests "$GPUCTL_BUILD/unit-tests"
if command -v python3 >/dev/null; then
	start nvml-ctypes-client python3 tests/helper/nvml_client.py "$GPUCTL_BUILD"
elif wanted nvml-ctypes-client "${WORDS[@]}"; then
	skipped=$((skipped + 1)); echo "nvml-ctypes-client: skipped, python3 is not installed"
fi
while [ "$running" -gt 0 ]; do finish_one; done
t1=$(date +%s%N)
printf 'wall time %d.%02d s\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 10000000 % 100))
echo "$pass passed, $fail failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
[ "$fail" -eq 0 ]
