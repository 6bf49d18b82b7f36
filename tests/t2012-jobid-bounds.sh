#!/usr/bin/env bash
# t2012-jobid-bounds.sh: one user's `jobid` asks cannot move the job ids of others (issue 21,
# item 5). A `jobid min 2^40` once moved the machine's counter there, and since each user's
# records keep their ids, every user's next ask (min = their highest + 1) passed the daemon's
# bound and was refused: submit failed for everyone, for good. Now a `min` moves the counter
# only within what that user may still skip (2^20 per user), further is ignored; ids handed out
# are rate-limited per user; a runner whose records are above the daemon's counter (the daemon
# lost its state) continues above them instead of failing.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
plan 11
if ! can_switch; then
	skip "job id bounds" "needs root and setpriv to act as a second user" 11
	exit 0
fi
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
daemon_start
ATT="python3 $ROOT/tests/helper/list_flood.py"
as_third() { setpriv --reuid=65533 --regid=65533 --clear-groups env HOME=/nonexistent "$@"; }

as_nobody $ATT jobid "$GPUCTL_SOCKET" $((1 << 40)) 20 >"$TMP/att" 2>&1
check_grep "the attacker's min 2^40 is ignored: its ids come from the counter" '^first [0-9]{1,7}$' "$TMP/att"
check_grep "and after a burst it gets ids at the per-user rate, not 100000 an ask" \
	'^count ([0-9]{1,4}|[1-8][0-9]{4})$' "$TMP/att"
check_exit "another user's submit still succeeds" 0 "$GPUCTL" submit -- true
id=$(cat "$TMP/stdout")
check "with an id far below 2^40 ($id)" test "$id" -lt 100000000
check_exit "and again after more of the attack" 0 sh -c "$ATT jobid '$GPUCTL_SOCKET' $((1 << 40)) 5 >/dev/null; exec '$GPUCTL' submit -- true"

# Asks past the burst are answered (one id each), not refused: each once rewrote the whole
# queue file, so a loop of them with a few maximal waiters queued kept the daemon writing.
mkfifo -m 666 "$TMP/hold"
as_nobody $ATT big "$GPUCTL_SOCKET" 5 <"$TMP/hold" >"$TMP/big" 2>&1 &
att=$!
exec {hold}>"$TMP/hold"
await_line '^queued' "$TMP/big" 60
"$GPUCTL" leases >/dev/null # a round trip: the daemon is done with the last waiter's save
w0=$(awk '/^wchar/ {print $2}' /proc/"$DAEMON"/io)
as_nobody $ATT jobid "$GPUCTL_SOCKET" 0 300 >/dev/null 2>&1
w1=$(awk '/^wchar/ {print $2}' /proc/"$DAEMON"/io)
check "300 asks do not each rewrite the queue file (5 maximal waiters): $((w1 - w0)) bytes written" \
	test $((w1 - w0)) -lt 200000
exec {hold}>&-
wait $att

# A restarted daemon recovering from a runner's records: a min within the user's bound is kept.
as_third $ATT jobid "$GPUCTL_SOCKET" 500000 >"$TMP/third" 2>&1
check_grep "a min within a user's skip bound moves the counter" '^first 500000$' "$TMP/third"
as_third $ATT jobid "$GPUCTL_SOCKET" $((500000 + (1 << 20))) >"$TMP/third" 2>&1
check_grep "past what that user may still skip it is ignored (the counter just past the first block)" '^first 600000$' "$TMP/third"

# The daemon loses its state (its counter back at 1) while this user's records hold ids past
# what one user may skip: a new runner's min is ignored, and it continues above its records.
first=$($ATT jobid "$GPUCTL_SOCKET" 0 | sed -n 's/^first //p')
$ATT jobid "$GPUCTL_SOCKET" $((first + 1000000)) >/dev/null # this user's own skip: allowed
kill_dead "$(runner_pid)" # a new runner, to ask the daemon for a block
"$GPUCTL" submit -- true >/dev/null
"$GPUCTL" wait "$(cat "$TMP/stdout")" >/dev/null 2>&1
high=$("$GPUCTL" jobs --json | jq '[.jobs[].id] | max')
kill_dead "$(runner_pid)"
daemon_stop
rm -rf "$DRUN/state"
daemon_start
check_exit "a new runner submits although the daemon's counter is below its records" 0 \
	"$GPUCTL" submit -- true
id=$(cat "$TMP/stdout")
check "its id is above the records' highest ($id > $high)" test "${id:-0}" -gt "$high"
check_grep "and its log says why" "ids continue from there" "$(runner_log)"
daemon_stop
