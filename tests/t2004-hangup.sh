#!/usr/bin/env bash
# t2004-hangup.sh: `nohup gpuctl run ... &` survives the session's hang-up (an SSH connection
# dropping), for a running job and for a waiter in the queue: a signal ignored when gpuctl
# starts stays ignored, for gpuctl and for the job, as with env, time and nice (issue 11.1).
# The hang-up is real: an interactive bash on a pseudo-terminal whose master side is closed
# (tests/helper/session_hangup.py); the kernel sends SIGHUP to the shell, and the shell to its jobs.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 8
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
daemon_start
WL=$B/workload
LOG=$TMP/log
: >"$LOG"
# release FIFO: one line to a workload's --until FIFO, without blocking if it is gone.
release() { local fd; exec {fd}<>"$1"; echo >&$fd; exec {fd}>&-; }

# A holder outside the session keeps one GPU; in the session a nohup'd job takes the other and
# a nohup'd waiter queues behind them.
mkfifo "$TMP/fifo-holder" "$TMP/fifo-job" "$TMP/ctl" "$TMP/go-waiter"
"$GPUCTL" run -q -n 1 -- "$WL" --log "$LOG" --tag holder --until "$TMP/fifo-holder" & holder=$!
await_line '^start holder ' "$LOG"
cat >"$TMP/session" <<SESSION
cd "$TMP"
nohup sh -c '"\$0" run -n 1 -- "\$1" --log "\$2" --tag job --until "\$3"; echo "job exit \$?" >>"\$4"' "$GPUCTL" "$WL" "$LOG" "$TMP/fifo-job" "$TMP/status" &
read -r _ <"$TMP/go-waiter"
nohup sh -c '"\$0" run -n 1 --wait -- "\$1" --log "\$2" --tag waiter --seconds 0; echo "waiter exit \$?" >>"\$3"' "$GPUCTL" "$WL" "$LOG" "$TMP/status" &
sh -c 'trap "echo control hup >>\"\$0\"; kill \$!; exit 0" HUP; sleep infinity & wait' "$TMP/status" &
echo SESSION-\$((6*7))
SESSION
python3 "$ROOT/tests/helper/session_hangup.py" "$TMP/session" "$TMP/ctl" >"$TMP/hangup" &
py=$!
await_line '^start job ' "$LOG"
echo go >"$TMP/go-waiter" # the waiter comes second: it must not win the job's GPU
wait_queue 1

check_eq "in the session: a job runs and a waiter queues" "2 1" "$(live_leases) $(queue_len)"
echo hangup >"$TMP/ctl"
wait $py
# The hang-up reached the session's jobs: one not nohup'd got SIGHUP. (How the shell itself ended
# is a race in bash between the signal and the terminal's EOF: killed by SIGHUP, or exit 0 once
# huponexit has hung up its jobs: both are a hang-up.)
check "the session was hung up: SIGHUP reached a job that was not nohup'd" \
	await_line '^control hup$' "$TMP/status"
check_eq "after the hang-up the waiter is still in the queue" 1 "$(queue_len)"
release "$TMP/fifo-job"
await_line '^job exit' "$TMP/status"
check_eq "the nohup'd job ran to its normal end" "job exit 0" "$(grep '^job exit' "$TMP/status")"
check_grep "and logged it" '^end job ' "$LOG"
await_line '^waiter exit' "$TMP/status"
check_eq "the nohup'd waiter got the GPU and ran its job" "waiter exit 0" "$(grep '^waiter exit' "$TMP/status")"
check_eq "after the job had ended" "job waiter" "$(awk '$1 == "end" && $2 == "job" {print "job"} $1 == "start" && $2 == "waiter" {print "waiter"}' "$LOG" | tr '\n' ' ' | sed 's/ $//')"
release "$TMP/fifo-holder"
wait $holder
check_eq "the holder outside the session was not touched" 0 $?
