#!/usr/bin/env bash
# t2011-list-bounds.sh: a second user's waiters cannot break `list` for others (issue 21, items
# 2 and 3). Five waiters with a name and a command of the maximum length, every byte escaped
# (~13 KB a record), once made one part of the answer pass the 64 KiB message limit: leases,
# release, status, doctor and the exporter failed for everyone. Then a flood: the most waiters a
# user may queue and many connections asking `list` and never reading: another user's `run` and
# `leases` are still served meanwhile, and the daemon is back to normal once the attacker quits.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 15
if ! can_switch; then
	skip "list bounds" "needs root and setpriv to act as a second user" 15
	exit 0
fi
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
printf '[daemon]\nmax_queued_per_user = 300\nmax_connections_per_user = 400\n' >"$TMP/daemon.conf"
daemon_start
ATT="python3 $ROOT/tests/helper/list_flood.py"

# Five maximal records: every part of the answer still fits in a message.
mkfifo -m 666 "$TMP/hold"
as_nobody $ATT big "$GPUCTL_SOCKET" 5 <"$TMP/hold" >"$TMP/big" 2>&1 &
att=$!
exec {hold}>"$TMP/hold"
await_line '^queued' "$TMP/big" 120
check_grep "the attacker queued five maximal waiters" '^queued 5$' "$TMP/big"
timeout 120 "$GPUCTL" leases >"$TMP/out" 2>"$TMP/err"
check_eq "leases still works for another user" "0" "$?"
check_eq "and lists all five (escaped)" 5 "$(grep -c 'pwned' "$TMP/out")"
check "with no raw control byte" sh -c "! grep -q \$(printf '\\033') '$TMP/out'"
timeout 120 "$GPUCTL" leases --json >"$TMP/json" 2>>"$TMP/err"
check_eq "leases --json: the five, their names intact" "5 256" \
	"$(jq -r '[(.queue | length), (.queue[0].name | length)] | join(" ")' "$TMP/json" 2>&1)"
timeout 120 "$GPUCTL" doctor >"$TMP/doctor" 2>&1
check "doctor checks the leases (it once could not read the answer)" sh -c "! grep -q 'leases not checked' '$TMP/doctor'"
exec {hold}>&-
wait $att

echo "# daemon RSS before the flood: $(awk '/^VmRSS/ {print $2}' /proc/"$DAEMON"/status) KiB"
# The flood: the most waiters a user may queue (the last 40 maximal, so that the attacker's own
# answers pass its 256 KiB of waiters and its socket buffers), and 200 connections asking and
# never reading: past the per-user rate, the unread answer and (here) the 4 MiB unread per user.
as_nobody $ATT flood "$GPUCTL_SOCKET" 300 200 20 40 <"$TMP/hold" >"$TMP/flood" 2>&1 &
att=$!
exec {hold}>"$TMP/hold"
await_line '^flooding' "$TMP/flood" 300
echo "# daemon RSS during the flood: $(awk '/^VmRSS/ {print $2}' /proc/"$DAEMON"/status) KiB"
check_grep "the attacker queued the most waiters it may" '^queued 300$' "$TMP/flood"
check_exit "another user's run -n 1 is served meanwhile" 0 \
	timeout 120 "$GPUCTL" run -q -n 1 --ignore-usage -- true
timeout 120 "$GPUCTL" leases >"$TMP/out" 2>"$TMP/err"
check_eq "and its leases" 0 $?
check_grep "which counts the attacker's waiters beyond the head of the queue" \
	'^ +nobody +[0-9]+ more requests, the first at position [0-9]+$' "$TMP/out"
timeout 120 "$GPUCTL" leases --json >"$TMP/json" 2>>"$TMP/err"
check_eq "leases --json: at most 32 listed, all 300 told" "true 300" \
	"$(jq -r '[(.queue | length) <= 32, (.queue | length) + ([.queue_counted[].count] | add)] | join(" ")' "$TMP/json" 2>&1)"
exec {hold}>&-
wait $att
grep '^refused by' "$TMP/flood" | sed 's/^/# /'
# Whether it also passes the 4 MiB a user may leave unread depends on the socket buffers (what
# the kernel holds is not the daemon's): shown above, not checked.
check_grep "the flood passed the per-user rate and the unread-answer bound" \
	'^refused by rate [0-9]+ unread [0-9]+' "$TMP/flood"
check_grep "the attacker's asks past an unread answer were refused, not answered" \
	'^answered [0-9]+ refused [1-9]' "$TMP/flood"
# Recovered: the attacker's waiters are gone, others are served as before.
no_waiters() { test "$("$GPUCTL" leases --json | jq '(.queue | length) + (.queue_counted | length)')" = 0; }
wait_for no_waiters
check "once the attacker quits its waiters are gone" no_waiters
check_exit "and another user's run is served" 0 timeout 120 "$GPUCTL" run -q -n 1 --ignore-usage -- true
daemon_stop
