#!/usr/bin/env bash
# t2010-offers.sh: a user who asks for GPUs and never takes them starves nobody (issue 21).
# nobody sends an `acquire` of one GPU every 50 ms and never a `take` (tests/helper/hoard.py):
# without a bound every GPU of the 4 sits offered to it in turn, and another user's `run -n 1`
# fails beside idle GPUs. While all 4 are offered to it, root's `run -n 1` waits for an offer to
# lapse instead of failing. Once its offers lapse it is backed off: one offer open at a time,
# after the other users, withdrawn when another user's request wants its GPUs. Then root's
# plain `run -n 1` succeeds every time, a third user's `run -n 4` (all the GPUs) too, and the
# hoarder is told why it is refused.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 10
if ! can_switch; then
	skip "offers not taken" "needs root and setpriv to act as three users" 10
	exit 0
fi
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
printf '[daemon]\noffer_timeout = 1s\n' >"$TMP/daemon.conf"
daemon_start
THIRD=(setpriv --reuid=65533 --regid=65533 --clear-groups env HOME=/nonexistent)
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent)
: >"$TMP/hoard.out"; chmod 666 "$TMP/hoard.out"
: >"$TMP/errors"
"${NOBODY[@]}" python3 "$ROOT/tests/helper/hoard.py" "$GPUCTL_SOCKET" 600 >"$TMP/hoard.out" 2>&1 &
HOARD=$!
await_line '^offered' "$TMP/hoard.out"
# Unless the machine is slow enough for its offers to lapse first, every GPU is now offered to it.
await_line '^(holding 4|lapsed before)' "$TMP/hoard.out"
if grep -q '^holding 4' "$TMP/hoard.out"; then
	timeout 120 "$GPUCTL" run -q -n 1 --ignore-usage -- true 2>>"$TMP/errors"
	check_eq "with every GPU offered to the hoarder, root's run -n 1 waits for an offer to lapse, not fails" 0 $?
else
	skip "with every GPU offered to the hoarder, root's run -n 1 waits" "its offers lapsed first (a slow machine)"
fi
# Its offers lapse (the daemon logs each): from then on it is backed off.
await_count 'did not take its offer' "$DLOG" 2
codes=""
for i in 1 2 3 4 5; do
	timeout 120 "$GPUCTL" run -q -n 1 --ignore-usage -- true 2>>"$TMP/errors"
	codes="$codes$? "
done
check_eq "root's run -n 1 (no --wait) succeeds every time beside the hoarder" "0 0 0 0 0 " "$codes"
# The hoarder's one offer may have just lapsed when the request comes (a loaded machine), or it
# may be between offers: each request is made just after the hoarder says it has a new one (or
# after 10 s without), up to 6 times, until one finds an offer open to withdraw.
codes=""
for i in 1 2 3 4 5 6; do
	await_count '^offer [0-9]' "$TMP/hoard.out" $(($(grep -c '^offer [0-9]' "$TMP/hoard.out") + 1)) 10
	timeout 120 "${THIRD[@]}" "$GPUCTL" run -q -n 4 --ignore-usage -- true 2>>"$TMP/errors"
	codes="$codes$? "
	grep -q 'offer withdrawn for another user' "$DLOG" && break
done
check_eq "a third user's run -n 4 gets every GPU, the hoarder's open offer withdrawn" "" "${codes//0 /}"
check_eq "neither saw an error" "" "$(head -3 "$TMP/errors")"
check_grep "the daemon says it withdrew the hoarder's offer" 'offer withdrawn for another user' \
	"$DLOG"
kill "$HOARD"; wait "$HOARD" 2>/dev/null
# A hoarder of a few seconds, to read what it was told.
as_nobody python3 "$ROOT/tests/helper/hoard.py" "$GPUCTL_SOCKET" 3 >"$TMP/hoard2.out" 2>&1
sed 's/^/# hoarder: /' "$TMP/hoard2.out"
check_grep "a hoarder backed off is told why it is refused" \
	'first error: error.*did not take .*one offer open at a time' "$TMP/hoard2.out"
check_exit "the daemon still answers" 0 "$GPUCTL" leases
# A take sent in time but read late (the daemon stopped past offer_timeout, as a loaded machine
# or a flood from others can delay it) is honoured, not lapsed.
check_eq "a take sent in time and read late is honoured" granted \
	"$(timeout 120 python3 "$ROOT/tests/helper/late_take.py" "$GPUCTL_SOCKET" "$DAEMON" 1.5 2>&1)"
# A dry run takes nothing, so it withdraws no backed-off user's open offer (tests/helper/sitter.py:
# its first offer lapses, the one its back-off allows is left open).
daemon_stop
printf '[daemon]\noffer_timeout = 5s\n' >"$TMP/daemon.conf"
daemon_start
: >"$TMP/sit.out"; chmod 666 "$TMP/sit.out"
"${NOBODY[@]}" python3 "$ROOT/tests/helper/sitter.py" "$GPUCTL_SOCKET" "$TMP/go" >"$TMP/sit.out" 2>&1 &
SIT=$!
await_line '^(offered again|answered)' "$TMP/sit.out"
check_exit "root's dry run of every GPU beside a backed-off user's open offer" 0 \
	"$GPUCTL" run --dry-run -q -n 4 --ignore-usage
touch "$TMP/go"
wait "$SIT"
if [ "$(tail -1 "$TMP/sit.out")" = lapsed ]; then
	skip "leaves that offer open" "the offer lapsed (offer_timeout) before the dry run was done: a slow machine"
else
	check_eq "leaves that offer open (only a request that takes GPUs withdraws it)" \
		"offered again,kept" "$(tail -2 "$TMP/sit.out" | paste -sd,)"
fi
