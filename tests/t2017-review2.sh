#!/usr/bin/env bash
# t2017-review2.sh: what a second review of issue 21's fixes found. The queue file is rewritten
# whole (each waiter's record: a user's maximal waiters make it MBs) and was rewritten for every
# request, also one that does not wait and is refused at once: one user's loop of them kept the
# daemon at a core writing tens of MB/s, each other request waiting behind a save. The file holds
# waiters only; its "next" is then not rewritten for requests that did not wait, so a restarted
# daemon must still hand out no seq a live lease was granted as (the next daemon would take a
# waiter of that seq for the lease and drop it from the queue).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 6
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
daemon_start
ATT="python3 $ROOT/tests/helper/list_flood.py"

# A lease granted to a request that did not wait (seq 1 of a fresh daemon, the queue file not
# written for it), the daemon killed, then a waiter; after a restart the waiter keeps its place.
mkfifo "$TMP/f1"
"$GPUCTL" run -q -n 1 -- sh -c 'read x <"$1"' - "$TMP/f1" & held=$!
wait_granted 1
"$GPUCTL" leases >/dev/null # the daemon is past the grant (what it saves then is saved)
kill -KILL "$DAEMON" # no save at exit: the queue file as the grant left it
wait "$DAEMON" 2>/dev/null
daemon_start
"$GPUCTL" run -q -n 2 --wait -- true 2>"$TMP/werr" & waiter=$!
wait_queue 1
n=$(count_lines "$DLOG" 'waiter of the previous daemon keep')
daemon_stop
daemon_start
check "a waiter queued after a restart keeps its place after the next (its seq is not the lease's)" \
	await_count 'waiter of the previous daemon keep' "$DLOG" $((n + 1)) 10
echo >"$TMP/f1"
wait $held
wait $waiter
check_eq "once the lease ends the waiter runs" 0 $?

if can_switch; then
	mkfifo -m 666 "$TMP/hold"
	as_nobody $ATT big "$GPUCTL_SOCKET" 20 <"$TMP/hold" >"$TMP/big" 2>&1 &
	att=$!
	exec {hold}>"$TMP/hold"
	await_line '^queued' "$TMP/big" 60
	"$GPUCTL" leases >/dev/null # a round trip: the daemon is done with the last waiter's save
	w0=$(awk '/^wchar/ {print $2}' /proc/"$DAEMON"/io)
	as_nobody $ATT tries "$GPUCTL_SOCKET" 300 >"$TMP/tries" 2>&1
	w1=$(awk '/^wchar/ {print $2}' /proc/"$DAEMON"/io)
	check_grep "a second user's 300 requests that do not wait are answered" '^answered 300$' "$TMP/tries"
	check "and do not each rewrite the queue file (20 maximal waiters): $((w1 - w0)) bytes written" \
		test $((w1 - w0)) -lt 500000
	exec {hold}>&-
	wait $att
else
	skip "a second user's requests" "needs root and setpriv to act as a second user" 2
fi

# A lock found held with its record removed names the grantee's pid as of the grant (run's,
# env's): that pid, reused since by another user's process (root's sleep here, the lock file
# rewritten in place as a reuse would leave it), is not shown as the found lease's holder
# (`release` would aim at it).
if can_switch; then
	ST=$DRUN/state
	U1=$(awk '/^uuid = GPU/{print $3}' "$TMP/m2" | sed -n 2p)
	mkfifo -m 666 "$TMP/go1"
	: >"$TMP/kept"; chmod 666 "$TMP/kept"
	as_nobody "$GPUCTL" run -q -g 1 --ignore-usage -- sh -c 'echo locked >>"$0"; read x <"$1"' "$TMP/kept" "$TMP/go1" &
	j1=$!
	await_line '^locked$' "$TMP/kept"
	daemon_stop
	rm -f "$ST"/lease-????????????????
	sleep 600 & other=$!
	sed "s/^pid .*/pid $other/" "$ST/$U1.lock" >"$TMP/lock" && cat "$TMP/lock" >"$ST/$U1.lock"
	daemon_start
	check_eq "the lock's GPU is a found lease of nobody's" "nobody" \
		"$("$GPUCTL" leases --json | jq -r '[.leases[] | select(.kind == "found") | .user] | join(",")')"
	check "not naming root's process that now has the lock's pid ($other)" \
		test "$("$GPUCTL" leases --json | jq -r '.leases[] | select(.kind == "found") | .pid')" != "$other"
	kill $other
	echo go >"$TMP/go1"
	wait $j1
else
	skip "a found lease's holder" "needs root and setpriv to act as a second user" 2
fi

daemon_stop
