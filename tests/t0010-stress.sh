#!/usr/bin/env bash
# t0010-stress.sh: 64 concurrent `run --wait` requests of 1 to 3 GPUs on a 4-GPU machine from two
# users; then gpuctl killed with SIGKILL at random moments. No GPU may ever have two jobs at once,
# every job runs, equal requests run in arrival order, and nothing stays leased at the end.
. "$(dirname "$0")/lib.sh"
plan 11
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
chmod 755 "$TMP"
WL=$B/workload
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
mkdir -p "$GPUCTL_STATE_DIR" && chmod 1777 "$GPUCTL_STATE_DIR"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	as_user() { if [ $(($1 % 2)) = 1 ]; then shift; setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$@"; else shift; "$@"; fi; }
	ok "two users: root and nobody"
else
	as_user() { shift; "$@"; }
	skip "second user" "needs root and setpriv; every request comes from one user"
fi

: >"$TMP/jobs"
pids=()
for i in $(seq 0 63); do
	n=$((1 + (i * 7) % 3))
	echo "j$i $n" >>"$TMP/jobs"
	as_user $i "$GPUCTL" run -n $n --wait --ignore-usage -- "$WL" --mode all --seconds 0.1 --log "$LOG" --tag "j$i" 2>>"$TMP/errors" &
	pids+=($!)
	sleep 0.01
done
fails=0
for p in "${pids[@]}"; do wait $p || fails=$((fails + 1)); done
check_eq "all 64 gpuctl runs succeeded" 0 "$fails"
python3 "$ROOT/tests/check_schedule.py" "$LOG" "$TMP/jobs"
check_eq "nothing leased or queued afterwards" "0 0" "$(live_leases) $("$GPUCTL" leases --json | jq '.queue | length')"

# Kills at random moments: while waiting, while starting the job, while it runs.
: >"$LOG"
RANDOM=7
for i in $(seq 0 23); do
	"$GPUCTL" run -n $((1 + i % 2)) --wait --ignore-usage -- "$WL" --mode all --seconds 0.3 --log "$LOG" --tag "k$i" 2>/dev/null &
	victim=$!
	sleep "0.0$((RANDOM % 10))"
	kill -KILL $victim 2>/dev/null
done
wait 2>/dev/null
# Jobs whose gpuctl died keep running on their own: wait for them to end.
for i in $(seq 100); do pgrep -f "$WL --mode all --seconds 0.3" >/dev/null || break; sleep 0.05; done
: >"$TMP/none"
python3 "$ROOT/tests/check_schedule.py" "$LOG" "$TMP/none" | grep -v 'every job'
check_eq "after random kills nothing stays leased or queued" "0 0" "$(live_leases) $("$GPUCTL" leases --json | jq '.queue | length')"
check_exit "and all four GPUs can be leased" 0 "$GPUCTL" run -n 4 --ignore-usage -- true
