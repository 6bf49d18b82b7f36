#!/usr/bin/env bash
# t2046-no-pidfd.sh: where a seccomp filter refuses pidfds (EPERM, as in a container whose
# runtime's profile predates them: tests/helper/nopidfd), gpuctl reads that as "no pidfds here",
# never as a process gone: `kill` leaves a live process alone and says why (it said "already
# gone", exit 0); `submit` refuses detached jobs and says why (its job ran on as "running" after
# it ended); `env` falls back to the shell's start time and its lease still ends with the shell;
# `release` says the lease ends with its shell; `run` works as ever.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 20
use_state
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
daemon_start
NP=$B/nopidfd
WL=$B/workload
export XDG_STATE_HOME=$TMP/xdg

# The filter itself: pidfd_open fails with EPERM under it, and works outside it.
check_exit "under the filter pidfd_open(2) is refused (EPERM)" 1 "$NP" python3 -c \
	'import os, sys; sys.exit(0 if os.pidfd_open(os.getpid()) else 2)'
check_grep "  with EPERM" 'PermissionError' "$TMP/stderr"

# kill: the process lives on, and kill says why it left it alone.
CUDA_VISIBLE_DEVICES=1 "$WL" --mem 3000 & a=$!
await_workload $a
check_exit "kill --pid under the filter fails (exit 1)" 1 "$NP" "$GPUCTL" kill --pid $a
check_grep "  saying the process was left alone, and why" \
	"^pid $a \\($(id -un)\\) on GPU 1: left alone: pidfd_open is refused here \\(.*seccomp filter" "$TMP/stdout"
check "  never that it is gone" bash -c "! grep -q 'gone' '$TMP/stdout'"
check "  and the process still runs" kill -0 $a
check_exit "kill --pid outside it ends it" 0 "$GPUCTL" kill --pid $a
wait $a 2>/dev/null

# env: the lease is tied to the shell by its start time, and ends when the shell does.
sleep 300 & shell=$!
check_exit "env under the filter leases" 0 "$NP" "$GPUCTL" env -n 1 --hold-pid $shell
check_eq "  one lease" 1 "$(live_leases)"
# release cannot signal the holder: it says so, and that the lease ends with its shell.
id=$("$GPUCTL" leases --json | jq -r '.leases[0].id')
check_exit "release under the filter fails (exit 1)" 1 "$NP" "$GPUCTL" release --lease "$id"
check_grep "  saying the lease ends when its shell exits" \
	"left alone: pidfd_open is refused here .*; the lease ends when the process it is for \\(pid $shell\\) exits" "$TMP/stderr"
kill $shell
wait $shell 2>/dev/null
check "the lease ends with the shell (its start time watched)" wait_leases 0

# submit: no runner that could not see its jobs end.
check_exit "submit under the filter fails (exit 1)" 1 "$NP" "$GPUCTL" submit -n 1 -- true
check_grep "  saying detached jobs need pidfds, and why there are none" \
	'detached jobs need pidfds.*pidfd_open is refused here .*`gpuctl run` works without them' "$TMP/stderr"
check_eq "  and no runner was started (no runner.sock)" "" "$(find "$XDG_STATE_HOME" -name runner.sock 2>/dev/null)"

# run: the job runs on its lease, and the lease ends with it.
check_exit "run under the filter works" 0 "$NP" "$GPUCTL" run -q -n 1 -- sh -c 'echo "gpus=$CUDA_VISIBLE_DEVICES"'
check_grep "  on the GPU it leased" '^gpus=[01]$' "$TMP/stdout"
daemon_stop

# A private daemon (no shared one) started under the filter: close_range is refused too, and
# still none of the caller's descriptors passes to it (one here, open on a file of its own).
# Its job holds the lease (it waits on a FIFO) while the processes are looked at: a private
# daemon with nothing to do exits after 2 s, and over thousands of processes on a loaded machine
# the look took longer than that once the job had ended. The caller itself (run, and the job
# under it) holds the descriptor; no other process may, the daemon above all.
mkdir -m 700 "$TMP/rt"
: >"$TMP/marker"
mkfifo "$TMP/go"
exec 7<"$TMP/marker"
env -u GPUCTL_STATE_DIR GPUCTL_SOCKET="$TMP/none/gpuctl.sock" XDG_RUNTIME_DIR="$TMP/rt" \
	"$NP" "$GPUCTL" run -q -n 1 -- sh -c 'echo started; read -r x <"$0"' "$TMP/go" >"$TMP/prun.out" 2>&1 &
prun=$!
exec 7<&-
await_line '^started$' "$TMP/prun.out"
pd=$(pgrep -f "gpuctl daemon .*$TMP/rt" || true)
held=$(for f in /proc/[0-9]*/fd/*; do
	[ "$(readlink "$f" 2>/dev/null)" = "$TMP/marker" ] || continue
	p=${f#/proc/} p=${p%%/*} q=${f#/proc/} q=${q%%/*}
	# run's own and its job's (descendants of run), unless it is the daemon's
	while [ -n "$q" ] && [ "$q" != "$prun" ] && [ "$q" != "$pd" ] && [ "$q" -gt 1 ]; do
		q=$(awk '/^PPid:/ {print $2}' "/proc/$q/status" 2>/dev/null)
	done
	[ "$q" = "$prun" ] && [ "$p" != "$pd" ] || echo "$f"
done)
timeout 60 sh -c 'echo go >"$0"' "$TMP/go"
wait $prun
check_eq "run with no shared daemon under the filter works (its job held the lease meanwhile)" 0 "$?"
check "  a private daemon was started (and still runs)" test -n "$pd"
check_eq "  and no process holds the caller's descriptor (private daemon: ${pd:-none})" "" "$held"
