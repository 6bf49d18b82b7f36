#!/usr/bin/env bash
# t2002-queue.sh: run --wait through the daemon: a waiter waits while the GPUs are held and starts
# once they are released (how soon, and its CPU meanwhile, are bench/daemon.sh's); first come,
# first served with a reservation for the head; timeouts, signals and SIGKILL leave the queue and
# never start a job later; a stopped waiter holds nobody up and keeps its place; the progress
# line on a terminal.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 35
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
printf '[daemon]\noffer_timeout = 0.3s\n' >"$TMP/daemon.conf"
daemon_start
WL=$B/workload
LOG=$TMP/log
: >"$LOG"
starts() { awk '$1 == "start" {print $3, $2}' "$LOG" | sort -n | awk '{print $2}' | tr '\n' ' '; }
# hold TAG N: a job holding N GPUs until `release TAG`; returns once it runs. It asks with
# --wait: the offer timeout here is 0.3 s, and a client on a loaded machine that misses it
# without --wait is refused (busy); with --wait it keeps its place and is offered again.
declare -A HOLDER
hold() {
	mkfifo "$TMP/fifo-$1"
	"$GPUCTL" run -q -n "$2" --wait -- "$WL" --log "$LOG" --tag "$1" --until "$TMP/fifo-$1" &
	HOLDER[$1]=$!
	await_line "^start $1 " "$LOG"
}
release() { echo >"$TMP/fifo-$1"; }
# released TAG: release it and wait for its gpuctl run to end (its lease with it).
released() { release "$1"; wait "${HOLDER[$1]}"; }

# A waiter waits while every GPU is held and starts once they are released. How soon it starts
# and what it costs while it waits are speeds: bench/daemon.sh measures them beside their targets.
hold h 4
"$GPUCTL" run -q -n 1 --wait -- "$WL" --seconds 0 --log "$LOG" --tag waiter &
w=$!
wait_queue 1
check_eq "while every GPU is held the waiter is queued, its job not started" "1 0" \
	"$(queue_len) $(count_lines "$LOG" '^start waiter')"
release h
wait $w
check_eq "the waiter ran" 0 $?
# The holder's job ended before its lease did, so the waiter's job starts strictly after it.
order=$(awk '$1=="end" && $2=="h"{e=$3} $1=="start" && $2=="waiter"{s=$3} END{print (e && s > e) ? "after" : "before"}' "$LOG")
check_eq "its job started after the holder's ended" after "$order"

# First come, first served: one GPU free at a time, three waiters in order.
: >"$LOG"
hold a 3
hold b 1
for t in w1 w2 w3; do
	"$GPUCTL" run -q -n 1 --wait -- "$WL" --seconds 0 --log "$LOG" --tag $t &
	wait_queue ${t#w}
done
"$GPUCTL" leases >"$TMP/out"
check_grep "leases shows the queue in order" '^  1\. .* wants 1 GPU' "$TMP/out"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "with positions" "[1,2,3]" "$(jqv '[.queue[].position]')"
release b
await_count '^end w' "$LOG" 3
release a
check_eq "equal requests run in arrival order" "w1 w2 w3 " "$(starts | sed 's/^a b //')"

# The head's request is reserved: a 3-GPU request is not starved by later 1-GPU ones.
: >"$LOG"
hold x 2
hold y 2
"$GPUCTL" run -q -n 3 --wait -- "$WL" --seconds 0 --log "$LOG" --tag big &
wait_queue 1
for t in s1 s2 s3; do
	"$GPUCTL" run -q -n 1 --wait -- "$WL" --seconds 0 --log "$LOG" --tag $t &
done
wait_queue 4
ended=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
release x
wait_ended $((ended + 1))
check_eq "two GPUs free, and they are kept for the head" "1 4" "$(live_leases) $(queue_len)"
release y
await_count '^end s' "$LOG" 3
granted() { awk '$1 == "start" {print $5, $2}' "$LOG" | sort -n | awk '{print $2}' | tr '\n' ' '; }
check_eq "the big request was granted first" "big" "$(granted | awk '{print $3}')"

# Leaving the queue: timeout, signals, SIGKILL; never a job started later.
hold h2 4
# Not before its second: a lower bound, which load cannot break; `timeout 60` only catches a hang.
start=$(date +%s%N)
check_exit "--wait=1 times out" 11 timeout 60 "$GPUCTL" run --wait=1 -- true
took=$((($(date +%s%N) - start) / 1000000))
check "not before its second ($took ms)" test "$took" -ge 900
check_grep "says so" 'no GPU became free within --wait' "$TMP/stderr"
check_eq "and left the queue" 0 "$(queue_len)"
python3 "$ROOT/tests/helper/progress_tty.py" "$GPUCTL"
check_eq "and nobody is left in it" 0 "$(queue_len)"
for sig in INT TERM; do
	env --default-signal=INT "$GPUCTL" run -q --wait -- "$WL" --seconds 0 --log "$LOG" --tag "late$sig" & w=$!
	wait_queue 1
	kill -$sig $w; wait $w
	rc=$?
	check_eq "SIG$sig while waiting: 128+N" $((128 + $(kill -l $sig))) $rc
	check_eq "and left the queue" 0 "$(queue_len)"
done
"$GPUCTL" run -q --wait -- true & w1=$!
wait_queue 1
"$GPUCTL" run -q --wait -- "$WL" --seconds 0 --log "$LOG" --tag second & w2=$!
wait_queue 2
kill -KILL $w1; wait $w1 2>/dev/null
wait_queue 1
check_eq "a waiter killed with SIGKILL vanishes from the queue" 1 "$(queue_len)"
release h2
wait $w2
check_grep "and the one behind it runs" '^end second' "$LOG"
check_eq "an interrupted waiter never started its job" 0 "$(count_lines "$LOG" '^start late')"

# A stopped waiter (SIGSTOP; Ctrl-S on its terminal blocks it the same way) holds nobody up
# and keeps its place.
: >"$LOG"
hold rest 3
hold s 1
"$GPUCTL" run -q -n 1 --wait -- "$WL" --seconds 0 --log "$LOG" --tag stopped & ws=$!
wait_queue 1
"$GPUCTL" run -q -n 1 --wait -- "$WL" --seconds 0 --log "$LOG" --tag next & wn=$!
wait_queue 2
kill -STOP $ws
release s
await_line '^end next' "$LOG"
check "the waiter behind a stopped one got the GPU" true
"$GPUCTL" leases --json >"$TMP/out"
check_eq "the stopped one keeps its place" '[[1,"stopped"]]' "$(jqv '[.queue[] | [.position, .state]]')"
check_grep "the daemon says why it passed it over" 'did not take its offer within 0.3 s; it keeps its place' "$DLOG"
kill -CONT $ws
wait $ws
check_eq "once it goes on, it runs" 0 $?
check_grep "its job ran" '^end stopped' "$LOG"
released rest
check_eq "nothing left leased or queued" "0 0" "$(live_leases) $(queue_len)"

# A long queue is listed whole (its answer comes in several bounded parts).
hold long 4
exec 7> >(python3 "$ROOT/bench/queue_requests.py" "$GPUCTL_SOCKET" 700 7 >"$TMP/queued")
await_line '^queued 700' "$TMP/queued"
check_eq "700 waiters listed, in order" "700 1 700" "$("$GPUCTL" leases --json | jq -r '[(.queue | length), .queue[0].position, .queue[-1].position] | join(" ")')"
exec 7>&-
released long

# One connection that sends 4,000 requests before it reads an answer, as a job runner resends its
# queued jobs to a restarted daemon: answered whole, never taken for a client that does not read
# (with each queued answer counted in a 312-byte record, it was disconnected past about 2,500).
hold long2 4
exec 7> >(python3 "$ROOT/bench/queue_requests.py" "$GPUCTL_SOCKET" 4000 1 >"$TMP/queued2" 2>&1)
await_line '^queued 4000|closed' "$TMP/queued2" 120
check_grep "4,000 requests sent at once on one connection are all answered" '^queued 4000$' "$TMP/queued2"
check_eq "  and the connection kept (no client logged for not reading)" 0 "$(grep -c 'does not read\|unread' "$DLOG")"
exec 7>&-
released long2

# The daemon writes its queue file after each batch of events: killed between a grant and that
# write, it leaves the granted request in the file. The next daemon must recognise it by the
# lease it became, not list it as a waiter (for orphan_grace, 30 s) that never comes back.
: >"$LOG"
hold q1 4
mkfifo "$TMP/fifo-q2"
"$GPUCTL" run -q -n 1 --wait -- "$WL" --log "$LOG" --tag q2 --until "$TMP/fifo-q2" & wq=$!
wait_queue 1
cp "$DRUN/state/queue" "$TMP/queue-then"
released q1
await_line '^start q2 ' "$LOG"
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null
cp "$TMP/queue-then" "$DRUN/state/queue" # the file as a kill before its write left it
daemon_start
check_eq "a request granted before the daemon died is its lease, not a waiter, after the restart" \
	"1 0" "$(live_leases) $(queue_len)"
echo >"$TMP/fifo-q2"
wait $wq
check_eq "nothing left leased or queued" "0 0" "$(live_leases) $(queue_len)"

# A waiter across a daemon restart keeps its place, and says so once: a daemon on its way out can
# take the rejoin into its backlog and close it again, and the same line came twice.
: >"$LOG"
hold r1 4
"$GPUCTL" run -q -n 1 --wait -- "$WL" --seconds 0 --log "$LOG" --tag rejoined 2>"$TMP/rejoin.err" & wr=$!
wait_queue 1
daemon_stop
daemon_start
wait_queue 1
released r1
wait $wr
check_eq "a waiter across a restart runs" 0 $?
check_eq "  and says it rejoins the queue once" 1 "$(grep -c 'rejoining the queue' "$TMP/rejoin.err")"
