#!/usr/bin/env bash
# t2015-daemon-down.sh: a shared daemon that is installed but not running (stopped, crashed,
# restarting: its runtime directory still holds its state, its socket is gone) is never bypassed
# with private leases: a lease waits for it, bounded and saying so, is picked up when it comes
# back, ends on a signal (also a queued waiter's, rejoining), and fails with exit 13 when it
# does not come; a reader says it is not running. Without a shared daemon, the private-leases note is said once per session, not by
# every command.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 16
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
use_state
daemon_setup
# Installed but down, its socket gone (a daemon that has not listened yet: at boot, failing to
# start, or restarting after its socket was removed); a stopped one's socket only refuses.
daemon_start
daemon_stop
rm -f "$GPUCTL_SOCKET"
check "the daemon's state directory is there, its socket is not" test -d "$DRUN/state" -a ! -e "$GPUCTL_SOCKET"

GPUCTL_DAEMON_TIMEOUT=0.5 check_exit "a lease with the shared daemon installed but down: exit 13" 13 \
	"$GPUCTL" run -q -n 1 -- true
check_grep "after saying what it waits for" "waiting up to 1 s for the gpuctl daemon at $GPUCTL_SOCKET \(installed" "$TMP/stderr"
check_grep "saying why it does not lease privately, and the fix" 'installed \(its state directory .*/run/state is there\) but not running.*systemctl start gpuctl' "$TMP/stderr"
check "no private daemon was started around it" test ! -e "$GPUCTL_STATE_DIR/gpuctl.sock"
check_exit "a reader says the daemon is not running (exit 13), not 'no leases'" 13 "$GPUCTL" leases
check_grep "naming it" 'installed .* but not running: no socket at' "$TMP/stderr"

# A daemon that comes back while a lease waits serves it.
"$GPUCTL" run -q -n 1 -- sh -c 'echo $CUDA_VISIBLE_DEVICES' >"$TMP/back.out" 2>"$TMP/back.err" &
lease=$!
await_line 'waiting up to 10 s for the gpuctl daemon' "$TMP/back.err"
daemon_start
wait $lease
check_eq "a daemon back within the wait grants the lease" "0:0" "$?:$(cat "$TMP/back.out")"
daemon_stop
rm -f "$GPUCTL_SOCKET"

# The wait ends on a signal (the waiter's own handlers are not yet installed: SIGTERM kills).
"$GPUCTL" run -q -n 1 -- true 2>"$TMP/int.err" &
lease=$!
await_line 'waiting up to 10 s for the gpuctl daemon' "$TMP/int.err"
kill -TERM $lease
wait $lease
check_eq "the wait ends on SIGTERM" 143 "$?"

# A waiter in the queue whose daemon goes away for good (killed, its socket removed): it rejoins,
# waiting for it, and a signal ends that wait (its handlers are installed by then: the signal is
# taken, the queue left, and the exit says which signal), not the end of its 30 s.
daemon_start
mkfifo "$TMP/go"
"$GPUCTL" run -q -n 2 --name hold -- "$B/workload" --log "$TMP/log" --tag hold --until "$TMP/go" &
hold=$!
await_line '^start hold' "$TMP/log"
"$GPUCTL" run -q -n 1 --wait -- true 2>"$TMP/rejoin.err" &
waiter=$!
wait_queue 1
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null
rm -f "$GPUCTL_SOCKET"
await_line 'waiting up to 10 s for the gpuctl daemon' "$TMP/rejoin.err"
kill -TERM $waiter
# Only a hang catcher: the wait for the daemon must end on the signal, not when its own 30 s
# run out (the signal then still pending, the exit would be the same).
(sleep 20; kill -KILL $waiter 2>/dev/null) &
watchdog=$!
wait $waiter
check_eq "a waiter rejoining a daemon that is gone ends on SIGTERM (128+15), not after its 30 s" 143 "$?"
kill $watchdog 2>/dev/null
check_grep "saying it left the queue" 'interrupted while waiting' "$TMP/rejoin.err"
echo go >"$TMP/go"
wait $hold

# No shared daemon installed: private leases, said once per session (the terminal's), however
# many commands run in it.
export GPUCTL_SOCKET=$TMP/none/gpuctl.sock
for i in 1 2 3; do "$GPUCTL" run -q -n 1 -- true 2>>"$TMP/note.err"; done
check_eq "private leases: three commands" 0 "$?"
check_eq "say so once in their session" 1 "$(grep -c 'no gpuctl daemon at' "$TMP/note.err")"
setsid -w "$GPUCTL" run -q -n 1 -- true 2>"$TMP/note2.err"
check_eq "and once in another session" 1 "$(grep -c 'no gpuctl daemon at' "$TMP/note2.err")"
# The marker is in the user's private directory (checked to be the user's alone before it is
# trusted: another user must not silence the notice).
check_eq "the marker lives in the private directory, mode 600" 600 \
	"$(stat -c %a "$GPUCTL_STATE_DIR"/notice-"$(ps -o sid= $$ | tr -d ' ')"-* 2>/dev/null | head -1)"
setsid -w "$GPUCTL" run -q -n 1 -- true 2>/dev/null
setsid -w "$GPUCTL" run -q -n 1 -- true 2>/dev/null
check_eq "markers of ended sessions are removed (this one's and the last one's are left)" 2 \
	"$(ls "$GPUCTL_STATE_DIR" | grep -c '^notice-')"
