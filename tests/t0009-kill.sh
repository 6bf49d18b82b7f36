#!/usr/bin/env bash
# t0009-kill.sh: gpuctl kill: own processes end, escalation to KILL after the grace period,
# another user's processes untouched, dry run, and no PID-reuse accident.
. "$(dirname "$0")/lib/lib.sh"
plan 32
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
chmod 755 "$TMP"
WL=$B/workload

check_exit "a selector is required" 2 "$GPUCTL" kill
CUDA_VISIBLE_DEVICES=1 "$WL" --mem 3000 & a=$!
CUDA_VISIBLE_DEVICES=1 "$WL" --mem 2000 & b=$!
CUDA_VISIBLE_DEVICES=2 "$WL" --mem 1000 & c=$!
await_workload $a; await_workload $b; await_workload $c
check_exit "--dry-run" 0 "$GPUCTL" kill --gpu 1 --dry-run
check_grep "lists what it would signal" "^would signal pid $a " "$TMP/stdout"
check "and signals nothing" kill -0 $a
check_exit "kill --gpu 1" 0 "$GPUCTL" kill --gpu 1
check_grep "reports each process" "^pid $a \($(id -un)\) on GPU 1: ended$" "$TMP/stdout"
check_grep "and the memory freed" '^GPU memory freed: 5000 MiB$' "$TMP/stdout"
wait $a $b 2>/dev/null
check "the others are untouched" kill -0 $c
check_exit "--pid" 0 "$GPUCTL" kill --pid $c --signal INT
wait $c 2>/dev/null

# Escalation to KILL for a process that ignores TERM.
CUDA_VISIBLE_DEVICES=0 "$WL" --ignore-term 1 & p=$!
await_workload $p
# SIGKILL never comes before the grace period: a lower bound, which load cannot break. `timeout 60`
# only catches a hang; how long kill takes past the grace period is bench/run.sh's figure.
start=$(date +%s%N)
check_exit "a process ignoring TERM" 0 timeout 60 "$GPUCTL" kill --mine --grace 0.5
took=$((($(date +%s%N) - start) / 1000000))
check_grep "is killed after the grace period" "^pid $p .*: killed with SIGKILL after the grace period$" "$TMP/stdout"
check_grep "kill says what the grace period waits for" "^gpuctl kill: sent SIGTERM; waiting up to 0.5 s for 1 process to end \\(pid $p\\), then SIGKILL$" "$TMP/stderr"
check "not before the grace period ($took ms)" test "$took" -ge 450
wait $p 2>/dev/null
check_exit "--signal USR1 does not escalate" 0 "$GPUCTL" kill --mine --signal USR1 --grace 0.1
check_exit "unknown signal" 2 "$GPUCTL" kill --mine --signal FOO
check_exit "--grace takes a duration, as run --wait does (none of mine left)" 0 "$GPUCTL" kill --mine --grace 1m
check_exit "and refuses what is not one" 2 "$GPUCTL" kill --mine --grace 1x

# Another user's processes.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	# An array, not a function: a function would run in a subshell under &, and $! would name
	# the subshell, not the process (setpriv and env exec, so $! is the workload itself).
	NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent)
	CUDA_VISIBLE_DEVICES=2 "${NOBODY[@]}" "$WL" --mem 1500 & o=$!
	CUDA_VISIBLE_DEVICES=3 "$WL" --mem 1500 & m=$!
	await_workload $o; await_workload $m
	check_exit "root without --user: another user's process is refused" 12 "$GPUCTL" kill --gpu 2,3
	check_grep "reported as refused" "^pid $o \(nobody\) on GPU 2: refused" "$TMP/stdout"
	check "and left running" kill -0 "$o"
	check_grep "while root's own process ended" "^pid $m \(root\) on GPU 3: ended$" "$TMP/stdout"
	wait $m 2>/dev/null
	"${NOBODY[@]}" "$GPUCTL" kill --mine >"$TMP/stdout" 2>&1
	check_eq "--mine as nobody" 0 $?
	wait $o 2>/dev/null
	CUDA_VISIBLE_DEVICES=3 "$WL" --mem 1500 & m=$!
	await_workload $m
	"${NOBODY[@]}" "$GPUCTL" kill --gpus 3 >"$TMP/stdout" 2>&1
	check_eq "nobody cannot signal root's process" 12 $?
	check "root's process untouched" kill -0 $m
	CUDA_VISIBLE_DEVICES=2 "${NOBODY[@]}" "$WL" --mem 1500 & o=$!
	await_workload $o
	check_exit "root naming the user may signal" 0 "$GPUCTL" kill --user nobody
	check_grep "and does" "^pid $o \(nobody\) on GPU 2: ended$" "$TMP/stdout"
	kill $m 2>/dev/null
else
	skip "another user" "needs root and setpriv to act as a second user" 9
fi
wait 2>/dev/null

# A pid that exits and is reused between listing and signalling is not signalled.
if [ "$(id -u)" = 0 ]; then
	# In a PID namespace of its own: choosing the next pid there cannot make a pid another test
	# (or anything else on the machine) still means come round again.
	if unshare --pid --fork --mount-proc true 2>/dev/null; then
		unshare --pid --fork --mount-proc python3 "$ROOT/tests/helper/kill_reuse.py" "$GPUCTL" "$WL" "$B/sleeper"
	else
		skip "pid reuse" "cannot make a PID namespace (unshare --pid)" 2
	fi
else
	skip "pid reuse" "needs root to choose the next pid" 2
fi

# A --pid that NVML lists but this PID namespace does not show: left alone, and since it is the
# one asked for, a failure (it exited 0, and the dry run gave no reason).
check_exit "--pid of a process not visible here: exit 1" 1 env FAKENVML_MACHINE="$MACHINES/h100x8.machine" "$GPUCTL" kill --pid 4000101 -y
check_grep "  left alone, saying why" '^pid 4000101 \(.*\) on GPU 0: not visible here \(another PID namespace\?\): left alone$' "$TMP/stdout"
check_exit "  the dry run" 0 env FAKENVML_MACHINE="$MACHINES/h100x8.machine" "$GPUCTL" kill --pid 4000101 --dry-run
check_grep "  says why it would leave it" '^leave pid 4000101 .* \(not visible here \(another PID namespace\?\): left alone\)$' "$TMP/stdout"
