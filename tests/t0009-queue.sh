#!/usr/bin/env bash
# t0009-queue.sh: run --wait: waiting costs no CPU, starts soon after a release, first come first
# served with a reservation for the head, timeouts, Ctrl-C and SIGKILL leave the queue.
. "$(dirname "$0")/lib.sh"
plan 18
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
WL=$B/workload
LOG=$TMP/log
queue_len() { "$GPUCTL" leases --json | jq '.queue | length'; }
wait_queue() { local i; for i in $(seq 250); do [ "$(queue_len)" = "$1" ] && return 0; sleep 0.02; done; return 1; }
starts() { awk '$1 == "start" {print $5, $2}' "$LOG" | sort -n | awk '{print $2}' | tr '\n' ' '; }

# A waiter starts soon after the GPUs free up, and costs no CPU meanwhile.
"$GPUCTL" run -n 4 -- "$WL" --seconds 2 --log "$LOG" --tag holder &
wait_leases 1
"$GPUCTL" run -n 1 --wait -- "$WL" --seconds 0 --log "$LOG" --tag waiter &
w=$!
wait_queue 1
sleep 1
ticks=$(awk '{print $14 + $15}' /proc/$w/stat)
check "waiting costs no CPU ($ticks ticks in 1 s)" test "$ticks" -le 10
wait $w
check_eq "the waiter ran" 0 $?
lat=$(awk '$1=="end" && $2=="holder"{e=$3} $1=="start" && $2=="waiter"{s=$3} END{print int((s-e)/1000000)}' "$LOG")
check "it started soon after the release (${lat} ms)" test "$lat" -lt 1000
wait

# First come, first served: one GPU free at a time, three waiters in order.
: >"$LOG"
"$GPUCTL" run -n 3 -- "$WL" --seconds 3 &
"$GPUCTL" run -n 1 -- "$WL" --seconds 1.5 &
wait_leases 2
for t in w1 w2 w3; do
	"$GPUCTL" run -n 1 --wait -- "$WL" --seconds 0.2 --log "$LOG" --tag $t &
	sleep 0.15
done
wait_queue 3
"$GPUCTL" leases >"$TMP/out"
check_grep "leases shows the queue in order" '^  1\. .* wants 1 GPU' "$TMP/out"
wait
check_eq "equal requests run in arrival order" "w1 w2 w3 " "$(starts)"

# The head's request is reserved: a 3-GPU request is not starved by later 1-GPU ones.
: >"$LOG"
"$GPUCTL" run -n 2 -- "$WL" --seconds 0.6 &
"$GPUCTL" run -n 2 -- "$WL" --seconds 2 &
wait_leases 2
"$GPUCTL" run -n 3 --wait -- "$WL" --seconds 0.3 --log "$LOG" --tag big &
wait_queue 1
for t in s1 s2 s3; do
	"$GPUCTL" run -n 1 --wait -- "$WL" --seconds 1 --log "$LOG" --tag $t &
	sleep 0.05
done
wait
check_eq "the big request went first" "big" "$(starts | cut -d' ' -f1)"

# Leaving the queue: timeout, Ctrl-C, SIGKILL.
"$GPUCTL" run -n 4 -- "$WL" --seconds 30 & holder=$!
wait_leases 1
start=$(date +%s%N)
check_exit "--wait=1 times out" 11 "$GPUCTL" run --wait=1 -- true
took=$((($(date +%s%N) - start) / 1000000))
check "after about a second ($took ms)" test "$took" -ge 900 -a "$took" -lt 4000
check_grep "says so" 'no GPU became free within --wait' "$TMP/stderr"
check_eq "and left the queue" 0 "$(queue_len)"
python3 "$ROOT/tests/progress_tty.py" "$GPUCTL"
check_eq "and nobody is left in it" 0 "$(queue_len)"
"$GPUCTL" run --wait -- true & w=$!
wait_queue 1
kill -INT $w; wait $w
check_eq "Ctrl-C while waiting: 130" 130 $?
check_eq "and left the queue" 0 "$(queue_len)"
"$GPUCTL" run --wait -- true & w1=$!
wait_queue 1
"$GPUCTL" run --wait -- sh -c 'echo second >'"$TMP/second" & w2=$!
wait_queue 2
kill -KILL $w1; wait $w1 2>/dev/null
check_eq "a waiter killed with SIGKILL vanishes from the queue" 1 "$(queue_len)"
kill $holder; wait $holder 2>/dev/null
wait $w2
check_eq "and the one behind it runs" "second" "$(cat "$TMP/second" 2>/dev/null)"
check_eq "nothing left leased or queued" "0 0" "$(live_leases) $(queue_len)"
