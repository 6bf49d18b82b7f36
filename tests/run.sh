#!/usr/bin/env bash
# tests/run.sh [WORD...]: runs the test scripts concurrently: the C unit tests, the ctypes NVML
# client and every tests/t*.sh (only those whose name contains a WORD, when given). Each prints
# TAP: a plan "1..N" and a line per check, "ok - ...", "not ok - ...", "ok - ... # SKIP why".
# A script is held to its plan: one that dies early, runs more checks than it planned or exits
# non-zero fails, whatever it printed. One line per script as it finishes (its whole output when
# it failed, or with VERBOSE=1), then exactly one last line: "N passed, N failed[, N skipped]".
#   TEST_JOBS=N      at most N scripts at once (default: 6 a CPU; 0: all at once). They mostly
#                    wait on events, but all of them at once on 2 cores (100 runnable, load 28)
#                    held several past TEST_TIMEOUT
#   TEST_TIMEOUT=S   a script still running after S seconds is stopped and fails (default 900:
#                    it only catches a hang; the busiest scripts, t3002 and t3003, took up to 240
#                    s of it with the rest beside them on a loaded 2-core machine)
# A checkout the second test user cannot reach (a 0700 home, a mktemp -d) is run from a
# world-readable copy of its own (stage below). Every process the suite starts carries
# GPUCTL_TEST_RUN in its environment: at the end, or on Ctrl-C, one still running is killed, and
# at the end it fails the run (sweep below), so nothing outlives the suite unnoticed.
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
# reachable PATH: the second test user (nobody) can reach PATH and read it (enter it: a folder).
reachable() {
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '[ -r "$1" ] && { [ ! -d "$1" ] || [ -x "$1" ]; }' - "$1" 2>/dev/null
}
second_user() { [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; }

# The scripts act as other users (nobody, daemon), who must reach the binary, the stand-in NVML,
# the helpers and the per-script directories under TMPDIR. Where they cannot, the suite copies
# the checkout (without .git and other builds) and this build into a world-readable directory of
# its own, runs there and removes it; if even that fails, one line says so and the checks as a
# second user are skipped (GPUCTL_TEST_NO_SWITCH: tests/lib/daemon.sh's can_switch).
# The copy goes to TMPDIR, or /tmp where the second user cannot reach TMPDIR: short paths, for
# the sockets under it (108 bytes at most).
stage_tmp() { if reachable "${TMPDIR:-/tmp}"; then echo "${TMPDIR:-/tmp}"; else echo /tmp; fi; }
stage() {
	local dir
	dir=$(mktemp -d "$(stage_tmp)/gpuctl-stage.XXXXXX") || return 1
	# DIR/gpuctl the copy; DIR/tmp the scripts' TMPDIR if theirs is out of the second user's
	# reach: beside the copy, never inside what a script copies of the checkout (t9005 does).
	if ! { mkdir "$dir/gpuctl" &&
		tar -C . --exclude=./.git --exclude='./build*' -cf - . | tar -C "$dir/gpuctl" -xf - &&
		cp -a "$GPUCTL_BUILD" "$dir/gpuctl/$GPUCTL_BUILD" && chmod -R a+rX "$dir" &&
		chmod 755 "$dir" && mkdir -m 1777 "$dir/tmp"; } ||
		! reachable "$dir/gpuctl/$GPUCTL_BUILD/gpuctl"; then
		rm -rf "$dir"
		return 1
	fi
	echo "$dir"
}
if [ -z "${GPUCTL_TEST_STAGED:-}" ] && second_user; then
	case $GPUCTL_BUILD in /*) ;; *) here=$PWD/$GPUCTL_BUILD ;; esac
	if ! reachable "${here:-$GPUCTL_BUILD}/gpuctl" || ! reachable "${TMPDIR:-/tmp}"; then
		if dir=$(stage); then
			echo "tests/run.sh: the second test user (nobody) cannot reach $PWD; running from a world-readable copy in $dir (removed afterwards)"
			trap 'rm -rf "$dir"' EXIT
			trap 'exit 130' INT TERM
			reachable "${TMPDIR:-/tmp}" || export TMPDIR=$dir/tmp
			GPUCTL_TEST_STAGED=$PWD bash "$dir/gpuctl/tests/run.sh" "$@"
			exit $?
		fi
		export GPUCTL_TEST_NO_SWITCH="the second test user (nobody) cannot reach $PWD and no world-readable copy could be made in ${TMPDIR:-/tmp} or /tmp"
		echo "tests/run.sh: $GPUCTL_TEST_NO_SWITCH: the checks as another user are skipped"
	fi
fi

OUT=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-run.XXXXXX")
export GPUCTL_TEST_RUN=$$.$(date +%s%N)
. tests/lib/sweep.sh
# Ctrl-C or a TERM: every script's process group, then whatever of the run escaped them.
interrupted() {
	local pid
	for pid in "${!name_of[@]}"; do kill -- "-$pid" 2>/dev/null; done
	# Their EXIT traps stop what they started (Slurm takes a few seconds): up to 20 s, each
	# script's end told by its pidfd.
	tests/helper/await-exit 20 "${!name_of[@]}" >/dev/null
	sweep_stop "GPUCTL_TEST_RUN=$GPUCTL_TEST_RUN" >/dev/null
	echo "tests/run.sh: interrupted; every process of the run was stopped"
	exit 130
}
trap 'rm -rf "$OUT"' EXIT
trap interrupted INT TERM
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
		why="exited with status $rc$([ "$rc" -eq 124 ] && echo " (stopped after ${TEST_TIMEOUT:-900} s)")"
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
	# Why a check was skipped, in the summary itself: each reason once, with its count.
	[ "$s" -gt 0 ] && sed -nE 's/^ok\b.*# *[Ss][Kk][Ii][Pp] *//p' "$tap" | sort | uniq -c |
		while read -r n r; do printf '    %d skipped: %s\n' "$n" "$r"; done
	return 0
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

# start NAME CMD...: in the background, under timeout (which gives it its own process group);
# after a TERM a script has 30 s for its EXIT trap (Slurm stops in up to 13 s) before KILL.
start() {
	local name=$1; shift
	wanted "$name" "${WORDS[@]}" || return 0
	while [ "${TEST_JOBS:-0}" -gt 0 ] && [ "$running" -ge "${TEST_JOBS:-0}" ]; do finish_one; done
	timeout -k 30 "${TEST_TIMEOUT:-900}" "$@" >"$OUT/$name.tap" 2>&1 </dev/null &
	name_of[$!]=$name
	start_of[$!]=$(date +%s%N)
	running=$((running + 1))
}

WORDS=("$@")
TEST_JOBS=${TEST_JOBS:-$((6 * $(nproc 2>/dev/null || echo 2)))}
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
# Nothing of the run may outlive it: a process left is a failure (and is stopped).
left=$(sweep_stop "GPUCTL_TEST_RUN=$GPUCTL_TEST_RUN")
if [ -n "$left" ]; then
	echo "### leftovers"
	echo "not ok - the scripts left processes running (stopped now):"
	sed 's/^/#   /' <<<"$left"
	fail=$((fail + 1))
fi
t1=$(date +%s%N)
printf 'wall time %d.%02d s\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 10000000 % 100))
echo "$pass passed, $fail failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
[ "$fail" -eq 0 ]
