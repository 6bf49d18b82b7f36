#!/usr/bin/env bash
# t2032-review.sh: a hostile second user against the features of issues 22-26 (review 1).
# Memory shares are bounded per user: nobody taking 1 MiB shares on one connection gets 64 (GPU_MAX) and
# the next is refused naming the cap (unbounded, each share a lease: a descriptor in the daemon
# and a walk per GPU process at every refresh); another user's share is still granted.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 9
if ! can_switch; then
	skip "a hostile second user" "needs root and setpriv to act as two users" 9
	exit 0
fi
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
daemon_start
mkfifo -m 666 "$TMP/hold"
as_nobody python3 "$ROOT/tests/helper/daemon_attack.py" shares "$GPUCTL_SOCKET" 64 \
	<"$TMP/hold" >"$TMP/attack" 2>&1 &
ATTACK=$!
exec 9>"$TMP/hold"
await_count '^held ' "$TMP/attack" 1
grep '^ok\|^not ok\|^#' "$TMP/attack"
check "while they hold them, another user's share is granted" \
	"$GPUCTL" run -q --mem 1G -- true
exec 9>&-
wait "$ATTACK" || true

# ---- a share that ends while the daemon is down ----
n=$(count_lines "$DLOG" 'lease [0-9a-f]+: uid')
mkfifo -m 666 "$TMP/end"
as_nobody "$GPUCTL" run -q --mem 1G -- sh -c 'read x <"$0"' "$TMP/end" 2>"$TMP/run.err" &
RUN=$!
wait_granted $((n + 1))
check "the share has a lock file of its own" \
	sh -c "ls '$DRUN/state' | grep -q 'lock.share-'"
daemon_stop
echo >"$TMP/end"
wait "$RUN" || true
daemon_start
check "once the daemon is back, the share that ended meanwhile left no lock file" \
	sh -c "! ls '$DRUN/state' | grep 'lock.share-'"

# ---- share_overuse = stop through a wrapper ----
daemon_stop
printf '[daemon]\nusage_poll = 200ms\nshare_overuse = stop\n' >"$TMP/daemon.conf"
daemon_start
LOG=$TMP/log
: >"$LOG"
mkfifo "$TMP/until"
"$GPUCTL" run -q --mem 1G -- sh -c '"$0" --log "$1" --tag w1 --mem 100 --until "$2" & wait' \
	"$B/workload" "$LOG" "$TMP/until" 2>"$TMP/stop.err" &
RUN=$!
await_line '^start w1 ' "$LOG" 30
wpid=$(pgrep -f -- "^$B/workload --log $LOG --tag w1 " | head -1)
printf '[process]\ngpu = 0\npid = %d\nused_memory_mib = 3000\n' "$wpid" >"$TMP/procs/$wpid.tmp"
mv "$TMP/procs/$wpid.tmp" "$TMP/procs/$wpid"
await_line 'over its share of 1024 MiB: stopping it' "$TMP/stop.err" 30
check "over its claim, the job run through a wrapper is stopped, its GPU process too" \
	await_line '^end w1 ' "$LOG" 30
[ -e "$TMP/procs/$wpid" ] && echo >"$TMP/until" # (not stopped: let it end)
wait "$RUN" || true
check "and its share ends" wait_leases 0

# ---- a share's record removed while the daemon is down ----
n=$(count_lines "$DLOG" 'lease [0-9a-f]+: uid')
mkfifo -m 666 "$TMP/end2"
as_nobody "$GPUCTL" run -q -g 0 --mem 1G -- sh -c 'read x <"$0"' "$TMP/end2" 2>"$TMP/run2.err" &
RUN=$!
wait_granted $((n + 1))
daemon_stop
find "$DRUN/state" -name 'lease-????????????????' -delete
daemon_start
check_exit "its GPU is still not free for a whole-GPU lease" 10 "$GPUCTL" run -q -g 0 -- true
check "and its FIFO, with no record, is removed (the scan read a directory offset at its end)" \
	sh -c "! ls '$DRUN/state' | grep 'fifo'"
echo >"$TMP/end2"
wait "$RUN" || true
