#!/usr/bin/env bash
# t2009-head.sh: the queue's head never keeps GPUs idle for ever (issue 21). On a 4-GPU machine:
# - a request that can only run once its own user's leases end (nobody holds GPU 0 and queues
#   `run -n 4 --wait`) reserves nothing: root's and a third user's `run --wait` start beside it
#   at once, `leases` says why it keeps nothing back, and it keeps its place (it runs once nobody
#   releases GPU 0);
# - an honest head (GPU 0 held by the third user) is marked as the head in `leases`, listed
#   first before a user holding fewer GPUs, and keeps GPUs 1-3 for itself: root's request waits;
# - with `head_reserve = 1s` such a head keeps them idle that long only: then `leases` says its
#   reservation expired, root's `run --wait` starts, and the head still runs once GPU 0 frees.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 21
if ! can_switch; then
	skip "the queue's head across users" "needs root and setpriv to act as three users" 21
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
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent)
as_third() { "${THIRD[@]}" "$@"; }
declare -A HOLD
# hold WHO TAG: a 1-GPU job of WHO (third or nobody) holding its GPU until `release TAG`.
hold() {
	local run=(as_nobody)
	[ "$1" = third ] && run=(as_third)
	mkfifo -m 666 "$TMP/fifo-$2"
	"${run[@]}" "$GPUCTL" run -q -n 1 --ignore-usage -- "$WL" --log "$LOG" --tag "$2" \
		--until "$TMP/fifo-$2" 2>>"$TMP/errors" &
	HOLD[$2]=$!
	await_line "^start $2 " "$LOG"
}
release() { echo >"$TMP/fifo-$1"; wait "${HOLD[$1]}"; }
note_of() { "$GPUCTL" leases --json | jq -r --arg u "$1" '.queue[] | select(.uid == ($u | tonumber)) | .note'; }
note_is() { [ "$(note_of "$1")" = "$2" ]; }
# A short job's exit status, its time bound far past what it takes.
quick() { timeout 120 "$@" -- true 2>>"$TMP/errors"; echo $?; }

# 1. A head that waits on its own leases.
printf '[daemon]\noffer_timeout = 20s\n' >"$TMP/daemon.conf"
daemon_start
hold nobody n0
as_nobody "$GPUCTL" run -q -n 4 --wait --ignore-usage -- true 2>>"$TMP/errors" &
BIG=$!
wait_queue 1
"$GPUCTL" leases >"$TMP/leases-own"
check_eq "a request that needs its own user's GPUs says it waits on them" own-leases "$(note_of 65534)"
check_grep "and leases says so in words" "waits on its own user's leases: reserves nothing" \
	"$TMP/leases-own"
check_eq "root's run --wait starts beside it" 0 "$(quick "$GPUCTL" run -q -n 1 --wait=60s --ignore-usage)"
check_eq "so does another user's, on the other two GPUs" 0 \
	"$(quick "${THIRD[@]}" "$GPUCTL" run -q -n 2 --wait=60s --ignore-usage)"
check_eq "it kept its place meanwhile" "[[1,65534]]" \
	"$("$GPUCTL" leases --json | jq -c '[.queue[] | [.position, .uid]]')"
check_eq "its owner's own run without --wait is not held back by it either" 0 \
	"$(quick "${NOBODY[@]}" "$GPUCTL" run -q -n 1 --ignore-usage)"
release n0
wait $BIG
check_eq "and runs once its own lease ends" 0 $?
daemon_stop

# 2. An honest head, marked first; 3. its reservation bounded by head_reserve. GPU 0 is the third
# user's, GPU 1 nobody's; nobody's 3-GPU request (GPUs 0, 2, 3 would do) is the head, and keeps
# GPUs 2 and 3 free for itself.
for reserve in 10m 1s; do
	printf '[daemon]\noffer_timeout = 20s\nhead_reserve = %s\n' $reserve >"$TMP/daemon.conf"
	daemon_start
	hold third h-$reserve
	hold nobody n-$reserve
	as_nobody "$GPUCTL" run -q -n 3 --wait --ignore-usage -- true 2>>"$TMP/errors" &
	BIG=$!
	wait_queue 1
	if [ $reserve = 10m ]; then
		"$GPUCTL" run -q -n 1 --wait --ignore-usage -- true 2>>"$TMP/errors" &
		SMALL=$!
		wait_queue 2
		"$GPUCTL" leases >"$TMP/leases-head"
		"$GPUCTL" leases --json >"$TMP/out"
		check_eq "the head is listed first and marked, root (holding fewer GPUs) second" \
			'[[1,65534,"head"],[2,0,null]]' "$(jqv '[.queue[] | [.position, .uid, .note]]')"
		check_eq "leases says, under the head's line, that it is served first until it runs" \
			"     (the head: served first until it runs, keeps the free GPUs it can use)" \
			"$(grep -A1 '^  1\. nobody ' "$TMP/leases-head" | tail -1)"
		check_grep "root's line follows" "^  2\. root " "$TMP/leases-head"
		check_eq "within head_reserve the head keeps its GPUs: root's request waits" 2 "$(queue_len)"
		release h-$reserve
		wait $BIG; big=$?
		wait $SMALL; small=$?
		check_eq "the head runs once GPU 0 frees, then root's request" "0 0" "$big $small"
	else
		wait_for note_is 65534 reserve-expired
		check_eq "after head_reserve the head says its reservation expired" reserve-expired \
			"$(note_of 65534)"
		check_eq "root's run --wait then starts on a GPU it kept" 0 \
			"$(quick "$GPUCTL" run -q -n 1 --wait=60s --ignore-usage)"
		release h-$reserve
		wait $BIG
		check_eq "and the head still runs once GPU 0 frees" 0 $?
	fi
	release n-$reserve
	daemon_stop
done
# 4. head_reserve is the user's, not the request's: a head whose time ran out, cancelled and
# asked again (or the user's next request), does not keep GPUs idle afresh.
printf '[daemon]\noffer_timeout = 20s\nhead_reserve = 2s\n' >"$TMP/daemon.conf"
daemon_start
hold third h-again
"${NOBODY[@]}" "$GPUCTL" run -q -n 4 --wait --ignore-usage -- true 2>/dev/null &
BIG=$! # (gpuctl itself: setpriv and env exec it)
wait_queue 1
wait_for note_is 65534 reserve-expired
kill "$BIG"; wait "$BIG" 2>/dev/null
wait_queue 0
as_nobody "$GPUCTL" run -q -n 4 --wait --ignore-usage -- true 2>>"$TMP/errors" &
BIG=$!
wait_queue 1
check_eq "asked again after its head_reserve, it keeps nothing back" reserve-expired \
	"$(note_of 65534)"
check_eq "root's run --wait starts on a GPU it would have kept" 0 \
	"$(quick "$GPUCTL" run -q -n 1 --wait=60s --ignore-usage)"
release h-again
wait $BIG
check_eq "and the request asked again still runs once GPU 0 frees" 0 $?
daemon_stop
check_eq "no client saw an error" "" "$(head -3 "$TMP/errors")"
printf '[daemon]\nhead_reserve = soon\n' >"$TMP/bad.conf"
check_exit "a bad head_reserve stops the daemon (exit 2)" 2 timeout 60 "$GPUCTL" daemon \
	--socket "$TMP/bad.sock" --state-dir "$TMP/bad-state" --config "$TMP/bad.conf"
check_grep "naming the key and what it takes" "head_reserve: none, or a duration" "$TMP/stderr"
