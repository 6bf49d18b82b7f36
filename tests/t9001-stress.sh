#!/usr/bin/env bash
# t9001-stress.sh: 64 concurrent `run --wait` requests of 1 to 3 GPUs on a 4-GPU machine from two
# users; gpuctl killed with SIGKILL at random moments; and the daemon killed with SIGKILL and
# restarted in the middle of a 40-contender two-user storm. No GPU may ever have two jobs at
# once, every job runs, equal requests run in arrival order, nothing stays leased at the end.
# The daemon runs `queue = fifo`: this is about the queue's mechanics (offers, places kept across
# kills and a restart) under arrival order; the fair order is t2008's. Equal requests keep their
# order within each user: across users they need not, since a user's request that waits on that
# user's own leases (holding 2 GPUs, asking for 3) holds GPUs back from that user's later requests
# only, and others go by them (t2009).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 19
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
# Generous: on a loaded 2-core machine a waiter may take a while to answer its offer, and a
# pass-over would (rightly) break strict arrival order.
printf '[daemon]\noffer_timeout = 20s\nqueue = fifo\n' >"$TMP/daemon.conf"
daemon_start
WL=$B/workload
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
if can_switch; then
	as_user() { if [ $(($1 % 2)) = 1 ]; then shift; as_nobody "$@"; else shift; "$@"; fi; }
	ok "two users: root and nobody"
else
	as_user() { shift; "$@"; }
	skip "second user" "needs root and setpriv; every request comes from one user"
fi

# storm N PREFIX SECONDS: N waiters of 1-3 GPUs, alternating users; pids in $PIDS.
storm() {
	PIDS=()
	for i in $(seq 0 $(($1 - 1))); do
		local n=$((1 + (i * 7) % 3))
		echo "$2$i $n $((i % 2))" >>"$TMP/jobs-$2"
		as_user $i "$GPUCTL" run -q -n $n --wait --ignore-usage -- "$WL" --mode all --seconds "$3" --log "$LOG" --tag "$2$i" 2>>"$TMP/errors" &
		PIDS+=($!)
	done
}

storm 64 j 0.05
fails=0
for p in "${PIDS[@]}"; do wait $p || fails=$((fails + 1)); done
check_eq "all 64 gpuctl runs succeeded" 0 "$fails"
python3 "$ROOT/tests/helper/check_schedule.py" "$LOG" "$TMP/jobs-j"
check_eq "nothing leased or queued afterwards" "0 0" "$(live_leases) $(queue_len)"

# Kills at random moments: while waiting, while starting the job, while it runs.
: >"$LOG"
RANDOM=7
victims=()
for i in $(seq 0 23); do
	"$GPUCTL" run -q -n $((1 + i % 2)) --wait --ignore-usage -- "$WL" --mode all --seconds 0.2 --log "$LOG" --tag "k$i" 2>/dev/null &
	victim=$!
	"$WL" --seconds "0.0$((RANDOM % 10))" --mode ignore >/dev/null 2>&1
	kill -KILL $victim 2>/dev/null
	victims+=($victim)
done
wait "${victims[@]}" 2>/dev/null
# Jobs whose gpuctl died run on, holding their lease: wait for each that started to end.
await_count '^end k' "$LOG" "$(count_lines "$LOG" '^start k')"
: >"$TMP/jobs-none"
python3 "$ROOT/tests/helper/check_schedule.py" "$LOG" "$TMP/jobs-none" | grep -v 'every job'
check_eq "after random kills nothing stays leased or queued" "0 0" "$(live_leases) $(queue_len)"
check_exit "and all four GPUs can be leased" 0 "$GPUCTL" run -q -n 4 --ignore-usage -- true

# The daemon dies (SIGKILL) and comes back in the middle of a storm.
: >"$LOG"
storm 40 d 0.1
await_count '^start d' "$LOG" 8
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null
daemon_start
fails=0
for p in "${PIDS[@]}"; do wait $p || fails=$((fails + 1)); done
check_eq "all 40 contenders ran despite the restart" 0 "$fails"
python3 "$ROOT/tests/helper/check_schedule.py" "$LOG" "$TMP/jobs-d"
check_grep "waiters rejoined the queue with their place" 'keep their place' "$DLOG"
check_eq "nothing leased or queued afterwards" "0 0" "$(live_leases) $(queue_len)"
check_eq "no daemon error reached a client" "" "$(grep -v 'rejoining the queue\|asking again\|waiting up to' "$TMP/errors" | head -3)"
