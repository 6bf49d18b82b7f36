#!/usr/bin/env bash
# t2032-review.sh: a hostile second user against the features of issues 22-26 (review 1).
# Memory shares are bounded per user: nobody taking 1 MiB shares on one connection gets 64 (GPU_MAX) and
# the next is refused naming the cap (unbounded, each share a lease: a descriptor in the daemon
# and a walk per GPU process at every refresh); another user's share is still granted.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 5
if ! can_switch; then
	skip "a hostile second user" "needs root and setpriv to act as two users" 5
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
