#!/usr/bin/env bash
# t2041-backfill.sh: backfill with time limits (issue 24). On a 2-GPU machine a third user holds
# GPU 0 and nobody's `run -n 2 --wait` is the queue's head, keeping GPU 1 idle for itself:
# - with GPU 0's lease limited to 1h, the head's estimated start (about 1h) is shown; root's
#   `run --time 30s` runs on the kept GPU at once (it ends before the head could start), with and
#   without --wait; root's `run --time 2h` and a run without --time do not (refused: busy);
# - the head still runs once GPU 0 frees;
# - with GPU 0's lease unlimited, the head's start is unknown (shown so) and nothing backfills.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 12
if ! can_switch; then
	skip "backfill across users" "needs root and setpriv to act as three users" 12
	exit 0
fi
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
WL=$B/workload
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
: >"$TMP/errors"; chmod 666 "$TMP/errors"
THIRD=(setpriv --reuid=65533 --regid=65533 --clear-groups env HOME=/nonexistent)
G=$GPUCTL
# hold TAG [RUN OPTIONS...]: the third user's 1-GPU job on GPU 0 until `release TAG`.
hold() {
	local tag=$1; shift
	mkfifo -m 666 "$TMP/fifo-$tag"
	"${THIRD[@]}" "$G" run -q -g 0 --ignore-usage "$@" -- "$WL" --log "$LOG" --tag "$tag" \
		--until "$TMP/fifo-$tag" 2>>"$TMP/errors" &
	HOLD=$!
	await_line "^start $tag " "$LOG"
}
release() { echo >"$TMP/fifo-$1"; wait "$HOLD"; }
quick() { timeout 120 "$G" run -q --ignore-usage "$@" -- true 2>>"$TMP/errors"; echo $?; }

printf '[daemon]\noffer_timeout = 20s\nkill_grace = 1s\n' >"$TMP/daemon.conf"
daemon_start
hold limited --time 1h
as_nobody "$G" run -q -n 2 --wait --ignore-usage -- true 2>>"$TMP/errors" &
BIG=$!
wait_queue 1
"$G" leases --json >"$TMP/out"
check_eq "nobody's 2-GPU request is the head" '"head"' "$(jqv '.queue[0].note')"
check "its estimated start is about an hour: the limit of the lease it waits for" \
	jq -e '.queue[0].estimated_start_in > 3500 and .queue[0].estimated_start_in <= 3602' "$TMP/out"
"$G" leases >"$TMP/table"
check_grep "leases says so in words" "estimated start in (0:59|1:00):[0-9][0-9], by the time limits" \
	"$TMP/table"
check_eq "a run --time 30s backfills on the GPU kept for the head" 0 "$(quick --time 30s)"
check_eq "so does one with --wait" 0 "$(quick --time 30s --wait=60s)"
check_eq "a run --time 2h (past the head's start) does not" 10 "$(quick --time 2h)"
check_eq "nor a run without a time limit" 10 "$(quick)"
check_eq "the head kept its place meanwhile" '[[1,65534]]' \
	"$("$G" leases --json | jq -c '[.queue[] | [.position, .uid]]')"
release limited
wait $BIG
check_eq "the head runs once GPU 0 frees" 0 $?

# Without a limit on GPU 0's lease the head's start is not known: nothing backfills.
hold unlimited
as_nobody "$G" run -q -n 2 --wait --ignore-usage -- true 2>>"$TMP/errors" &
BIG=$!
wait_queue 1
"$G" leases >"$TMP/table"
check_grep "the head's start is shown as unknown" "estimated start unknown: a lease it waits for has no time limit" \
	"$TMP/table"
check_eq "and a run --time 30s does not backfill" 10 "$(quick --time 30s)"
release unlimited
wait $BIG
check_eq "the head runs once GPU 0 frees" 0 $?
daemon_stop
