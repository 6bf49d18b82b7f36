#!/usr/bin/env bash
# t2008-fair.sh: the daemon's queue order across users. All four GPUs are held by a third user;
# user A (root) queues six 1-GPU requests, then user B (nobody) one; GPUs free one at a time and
# every job keeps its GPU. With `queue = fair` (the default) B is told place 2 and served
# second, right after A's first grant; with `queue = fifo` B is told place 7 and served seventh.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 10
if ! can_switch; then
	skip "fair queue across users" "needs root and setpriv to act as three users" 10
	exit 0
fi
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
WL=$B/workload
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
as_third() { setpriv --reuid=65533 --regid=65533 --clear-groups env HOME=/nonexistent "$@"; }
declare -A PID DONE
# job WHO TAG: a 1-GPU job of user WHO (third, a or b) that keeps its GPU until `release TAG`.
job() {
	local run=()
	case $1 in third) run=(as_third) ;; b) run=(as_nobody) ;; esac
	mkfifo -m 666 "$TMP/fifo-$2"
	"${run[@]}" "$GPUCTL" run -q -n 1 --wait --ignore-usage -- "$WL" --log "$LOG" --tag "$2" \
		--until "$TMP/fifo-$2" 2>>"$TMP/errors" &
	PID[$2]=$!
}
# release TAG: once (a fifo whose job has ended has no reader: opening it would block).
release() { [ -n "${DONE[$1]:-}" ] || echo >"$TMP/fifo-$1"; DONE[$1]=1; }
# The tags of the jobs started (a and b jobs), in the order they started.
served() { awk '$1 == "start" && $2 !~ /^h/ {print $2}' "$LOG" | tr '\n' ' '; }

# scenario MODE: the whole story under `queue = MODE`.
scenario() {
	: >"$LOG"
	rm -f "$TMP"/fifo-*
	printf '[daemon]\noffer_timeout = 20s\nqueue = %s\n' "$1" >"$TMP/daemon.conf"
	daemon_start
	local t n
	for t in h1 h2 h3 h4; do job third $t; done
	await_count '^start h' "$LOG" 4
	for n in 1 2 3 4 5 6; do job a a$n; wait_queue $n; done
	job b b1
	wait_queue 7
	"$GPUCTL" leases --json >"$TMP/out"
	"$GPUCTL" leases >"$TMP/leases-$1"
	POSITIONS=$(jqv '[.queue[] | [.position, .uid]]')
	# GPUs free one at a time: the holders, then the jobs in the order they started.
	n=0
	for t in h1 h2 h3 h4 $(seq 3); do
		[[ $t == h* ]] || t=$(served | awk -v k="$t" '{print $k}')
		release "$t"
		n=$((n + 1))
		await_count '^start [ab]' "$LOG" $n 30 || break
	done
	SERVED=$(served)
	for t in "${!PID[@]}"; do release "$t"; done
	for t in "${!PID[@]}"; do wait "${PID[$t]}"; done
	unset PID DONE; declare -gA PID DONE
	daemon_stop
}

scenario fair
check_eq "fair: places told are the order of service (B second)" \
	"[[1,0],[2,65534],[3,0],[4,0],[5,0],[6,0],[7,0]]" "$POSITIONS"
check_eq "fair: B was served second, right after A's first grant" "a1 b1 a2 a3 a4 a5 a6 " "$SERVED"
check_grep "fair: leases says how the queue is ordered" '^waiting \(fair share' "$TMP/leases-fair"
check_grep "fair: and lists B second" '^  2\. nobody ' "$TMP/leases-fair"
check_eq "fair: no client saw an error" "" "$(head -3 "$TMP/errors")"

scenario fifo
check_eq "fifo: B is told place 7" "[[1,0],[2,0],[3,0],[4,0],[5,0],[6,0],[7,65534]]" "$POSITIONS"
check_eq "fifo: B was served seventh" "a1 a2 a3 a4 a5 a6 b1 " "$SERVED"
check_grep "fifo: leases says first come, first served" '^waiting \(first come, first served\)' \
	"$TMP/leases-fifo"
check_grep "fifo: and lists B seventh" '^  7\. nobody ' "$TMP/leases-fifo"
check_eq "fifo: no client saw an error" "" "$(head -3 "$TMP/errors")"
