#!/usr/bin/env bash
# t2044-pastuse.sh: fair share by past use (issue 24). On a 4-GPU machine, [daemon]
# usage_half_life 1h: user A (nobody) holds all 4 GPUs for a while, then user B (the third
# user) runs a moment on one, so B was served last. Both then hold none and wait for GPU 0
# (root holds all four), A first in arrival:
# - B is served first (less past use), and `leases` shows each waiter's standing;
# - the same after a daemon restart (STATE/usage);
# - `queue = fair-held`, the rule before, serves A (B was served more recently);
# - a corrupt STATE/usage is moved aside, said so, and the daemon starts from no past use.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 9
if ! can_switch; then
	skip "fair share by past use across users" "needs root and setpriv to act as three users" 9
	exit 0
fi
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
WL=$B/workload
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
: >"$TMP/errors"; chmod 666 "$TMP/errors"
THIRD=(setpriv --reuid=65533 --regid=65533 --clear-groups env HOME=/nonexistent)
FOURTH=(setpriv --reuid=65532 --regid=65532 --clear-groups env HOME=/nonexistent)
G=$GPUCTL
past_of() { "$G" leases --json | jq --arg u "$1" "[.queue[] | select(.uid == (\$u | tonumber))][0].past_use_gpu_seconds"; }
printf '[daemon]\nusage_half_life = 1h\noffer_timeout = 20s\n' >"$TMP/daemon.conf"
daemon_start

# A holds 4 GPUs for a while (until the daemon has counted some 8 GPU-seconds: `leases` shows
# the standing of a waiter of A's, queued behind its own lease).
mkfifo -m 666 "$TMP/fifo-a4"
as_nobody "$G" run -q -n 4 --ignore-usage -- "$WL" --tag a4 --log "$LOG" --until "$TMP/fifo-a4" 2>>"$TMP/errors" &
A4=$!
await_line "^start a4 " "$LOG"
as_nobody "$G" run -q -n 1 --wait --ignore-usage -- true 2>>"$TMP/errors" &
AW=$!
wait_queue 1
until_used() { [ "$(past_of 65534)" -ge 8 ]; }
wait_for until_used
echo >"$TMP/fifo-a4"; wait $A4; wait $AW
# B runs a moment: it was served last.
"${THIRD[@]}" "$G" run -q -n 1 --ignore-usage -- true 2>>"$TMP/errors"

# race: root holds every GPU; A then B wait for GPU 0; root lets GPU 0 go. Who starts first?
race() {
	local tag=$1
	mkfifo -m 666 "$TMP/r0-$tag" "$TMP/r123-$tag" "$TMP/a-$tag" "$TMP/b-$tag"
	"$G" run -q -g 0 --ignore-usage -- "$WL" --tag r0-$tag --log "$LOG" --until "$TMP/r0-$tag" &
	R0=$!
	"$G" run -q -n 3 -g 1,2,3 --ignore-usage -- "$WL" --tag r123-$tag --log "$LOG" --until "$TMP/r123-$tag" &
	R123=$!
	await_line "^start r0-$tag " "$LOG"; await_line "^start r123-$tag " "$LOG"
	# The queue's head is a fourth user's request for GPUs 1-3 (the head is served first until
	# it runs, whatever the order: A, asking first, would be it otherwise).
	"${FOURTH[@]}" "$G" run -q -n 3 -g 1,2,3 --wait --ignore-usage -- true 2>>"$TMP/errors" &
	RC=$!
	wait_queue 1
	as_nobody "$G" run -q -g 0 --wait --ignore-usage -- "$WL" --tag A-$tag --log "$LOG" --until "$TMP/a-$tag" 2>>"$TMP/errors" &
	RA=$!
	wait_queue 2
	"${THIRD[@]}" "$G" run -q -g 0 --wait --ignore-usage -- "$WL" --tag B-$tag --log "$LOG" --until "$TMP/b-$tag" 2>>"$TMP/errors" &
	RB=$!
	wait_queue 3
	"$G" leases --json >"$TMP/out-$tag"
	"$G" leases >"$TMP/table-$tag"
	echo >"$TMP/r0-$tag"; wait $R0
	await_line "^start [AB]-$tag " "$LOG"
	FIRST=$(sed -n "s/^start \([AB]\)-$tag .*/\1/p" "$LOG" | head -1)
	local second=A
	[ "$FIRST" = A ] && second=B
	# (a FIFO's write waits for its reader: the second workload runs once the first ends)
	echo >"$TMP/$(echo "$FIRST" | tr AB ab)-$tag"
	await_line "^start $second-$tag " "$LOG"
	echo >"$TMP/$(echo "$second" | tr AB ab)-$tag"
	wait $RA $RB
	echo >"$TMP/r123-$tag"; wait $R123 $RC
}
race one
check_eq "B (less past use) is served first although A asked first and both hold none" B "$FIRST"
check "leases --json shows each waiting user's standing: A's past use above B's" \
	jq -e '([.queue[] | select(.uid == 65534)][0].past_use_gpu_seconds) > ([.queue[] | select(.uid == 65533)][0].past_use_gpu_seconds) and .fair_rule == "past-use"' "$TMP/out-one"
check_grep "and the table says so" "its user's past use: 0:00:[0-9][0-9] GPU-time, decayed" "$TMP/table-one"
check_grep "and names the rule" "fewest GPUs held first, then least past use" "$TMP/table-one"

daemon_stop
check "the daemon saved the past use in its state directory" test -s "$DRUN/state/usage"
daemon_start
race two
check_eq "after a restart (STATE/usage), B is still served first" B "$FIRST"

printf '[daemon]\nusage_half_life = 1h\noffer_timeout = 20s\nqueue = fair-held\n' >"$TMP/daemon.conf"
daemon_stop
daemon_start
race three
check_eq "queue = fair-held (the rule before): A, as B was served more recently" A "$FIRST"
daemon_stop

# A corrupt file: moved aside, said so; nothing overwritten.
printf 'usage\nu nobody lots\n' >"$DRUN/state/usage"
chown "$DUSER" "$DRUN/state/usage"
daemon_start
check_grep "a corrupt usage file: the daemon says so" "usage cannot be read as past use .*moved aside to usage.corrupt" "$DLOG"
check_eq "and keeps it aside, as it was" "u nobody lots" "$(sed -n 2p "$DRUN/state/usage.corrupt")"
daemon_stop
