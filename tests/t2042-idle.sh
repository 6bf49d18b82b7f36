#!/usr/bin/env bash
# t2042-idle.sh: idle leases seen, warned and released (issue 24), with simulated processes whose
# use changes during the test. [daemon] idle_warn 1s, idle_release 6s, usage_poll 0.2s,
# kill_grace 1s, idle_exempt the third user:
# - a lease whose process exits is idle: `leases` shows its idle time, the daemon warns it and
#   `run` says so on the user's terminal; then it is released: run's job gets SIGTERM, the
#   daemon's log says why, and the GPU goes to the waiter queued behind it;
# - an exempt user's lease, idle past idle_warn, is neither warned nor released (leases says exempt);
# - with idle_util 20 a lease whose process stays on its GPU is idle while that process's SM
#   use (NVML's per-process samples) is at or below 20%, and in use again above it;
# - a submitted job whose lease is released: the runner ends it, its log and record say why.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
plan 16
if ! can_switch; then
	skip "idle leases across users" "needs root and setpriv to act as three users" 16
	exit 0
fi
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
WL=$B/workload
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
export WORKLOAD_READY=$TMP/ready
: >"$WORKLOAD_READY"; chmod 666 "$WORKLOAD_READY"
THIRD=(setpriv --reuid=65533 --regid=65533 --clear-groups env HOME=/nonexistent)
G=$GPUCTL
lease_of() { "$G" leases --json | jq -c --arg u "$1" "[.leases[] | select(.uid == (\$u | tonumber))][0] | $2"; }
printf '[daemon]\nidle_warn = 1s\nidle_release = 10s\nusage_poll = 0.2s\nkill_grace = 1s\nidle_exempt = 65533\noffer_timeout = 20s\n' >"$TMP/daemon.conf"
daemon_start

# An idle lease: its workload ends after a moment, a sleep keeps the lease.
as_nobody "$G" run -q -g 0 -- sh -c "\"$WL\" --seconds 0.3 --tag i1 --log \"$LOG\"; exec sleep 3600" \
	2>"$TMP/idle-err" &
IDLE=$!
await_line "^end i1 " "$LOG"
# The exempt user's lease on GPU 1, idle from the start.
"${THIRD[@]}" "$G" run -q -g 1 -- sleep 3600 2>/dev/null &
EXEMPT=$!
wait_leases 2
# root waits for GPU 0.
timeout 120 "$G" run -q -g 0 --wait --ignore-usage -- true 2>"$TMP/waiter-err" &
WAITER=$!
await_line "lease [0-9a-f]+ \(uid 65534\) idle for [0-9]+ s \(no process of its own on its GPUs\): warned" "$DLOG"
check_grep "the daemon warns the idle lease, saying what idle means" "warned$" "$DLOG"
"$G" leases --json >"$TMP/warned"
"$G" leases >"$TMP/table"
if grep -q 'released (idle_release)' "$DLOG"; then # a loaded machine took idle_release to get here
	skip "leases --json shows it warned, idle a second or more" "the lease was already released" 2
else
	check "leases --json shows it warned, idle a second or more" \
		test "$(jq -c '[.leases[] | select(.uid == 65534)][0] | [.idle_warned, .idle_seconds >= 1]' "$TMP/warned")" = '[true,true]'
	check_grep "and the table says so" "idle for [0-9]+:[0-9]{2}:[0-9]{2} \(no process of its own using its GPUs\)(: warned|: released)" "$TMP/table"
fi
await_line "has been idle for" "$TMP/idle-err"
check_grep "run told the user on its terminal, with when it will be released" \
	"^gpuctl run: lease [0-9a-f]+ has been idle for [0-9]+:[0-9]{2}:[0-9]{2} .*it will be released in [0-9]+:[0-9]{2}:[0-9]{2} unless it is used" \
	"$TMP/idle-err"
wait $IDLE
check_eq "at idle_release the job got SIGTERM from its own gpuctl run (128+15)" 143 $?
check_grep "run said why" "is released \(the daemon's idle_release\)" "$TMP/idle-err"
check_grep "the daemon's log says it released the lease" "idle for [0-9]+ s .*: released \(idle_release\)" "$DLOG"
wait $WAITER
check_eq "the GPU went to the waiter queued behind it" 0 $?
check "the exempt user's lease lives on, idle past idle_warn, neither warned nor released" \
	test "$(lease_of 65533 '[.idle_exempt, .idle_warned, .idle_released, .idle_seconds >= 1]')" = '[true,false,false,true]'
kill $EXEMPT; wait $EXEMPT 2>/dev/null
wait_leases 0
daemon_stop

# idle_util: the process stays, its use changes. GPU 0's own utilisation is 60% (a process
# without samples is judged by it), then the workload's samples say 5%, then 80%.
sed -i '0,/^util_gpu = .*/s//util_gpu = 60/' "$TMP/m2"
printf '[daemon]\nidle_warn = 1s\nidle_util = 20\nusage_poll = 0.2s\n' >"$TMP/daemon.conf"
daemon_start
# Its pid is its own "ready" line, written after its "start": wait for that line, not the start
# (the last ready line before it is an earlier workload's).
r=$(count_lines "$WORKLOAD_READY" '^ready ')
as_nobody "$G" run -q -g 0 --ignore-usage -- "$WL" --tag u --log "$LOG" 2>"$TMP/util-err" &
U=$!
await_line "^start u " "$LOG"
await_count '^ready ' "$WORKLOAD_READY" $((r + 1))
pid=$(sed -n 's/^ready //p' "$WORKLOAD_READY" | sed -n "$((r + 1))p")
set_util() {
	printf '[process]\ngpu = 0\npid = %s\nused_memory_mib = 1000\nsm_util = %s\n' "$pid" "$1" >"$TMP/procs/$pid.tmp"
	mv "$TMP/procs/$pid.tmp" "$TMP/procs/$pid"
}
in_use() { [ "$(lease_of 65534 '.idle_seconds')" = 0 ]; }
check "a process on a GPU at 60% keeps its lease in use" wait_for in_use
n=$(count_lines "$DLOG" 'above idle_util on its GPUs\): warned')
set_util 5
await_count "\(uid 65534\) idle for [0-9]+ s \(none of its processes above idle_util on its GPUs\): warned" "$DLOG" $((n + 1))
check_grep "at 5% SM its lease is idle and warned" "none of its processes above idle_util" "$DLOG"
await_line "has been idle for" "$TMP/util-err"
check_grep "run said so on its terminal" "^gpuctl run: lease [0-9a-f]+ has been idle for" "$TMP/util-err"
set_util 80
await_line "\(uid 65534\) is in use again" "$DLOG"
check_eq "at 80% it is in use again" '[0,false]' "$(lease_of 65534 '[.idle_seconds, .idle_warned]')"
kill $U; wait $U 2>/dev/null
daemon_stop

# A submitted job whose lease is released for idleness.
printf '[daemon]\nidle_warn = 1s\nidle_release = 2s\nusage_poll = 0.2s\nkill_grace = 1s\n' >"$TMP/daemon.conf"
sed -i '0,/^util_gpu = .*/s//util_gpu = 0/' "$TMP/m2"
daemon_start
id=$("$G" submit -- sleep 3600)
timeout 120 "$G" wait "$id" >/dev/null 2>&1
check_eq "the runner ended the job, whose record says why" \
	'["failed","its lease was released for idleness (the daemon'"'"'s idle_release): SIGTERM"]' \
	"$(job_field "$id" '[.state, .reason]')"
"$G" logs "$id" >"$TMP/joblog"
check_grep "its log has the warning" "its lease [0-9a-f]+ has been idle for [0-9]+ s" "$TMP/joblog"
check_grep "and the release" "was idle for [0-9]+ s and is released" "$TMP/joblog"
daemon_stop
