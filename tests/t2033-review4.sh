#!/usr/bin/env bash
# t2033-review4.sh: review 4's hostile-user cases of the daemon's shared snapshot (issue 22). A
# GPU process of one user whose command line is longer than one message (64 KiB) neither breaks
# the view for everyone else nor is dropped: status through the snapshot is the direct output.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 3
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
daemon_start
WL=$B/workload
NONVML=$TMP/no-such-libnvidia-ml.so.1
# A command line of 100 KiB of blanks (each escaped to 3 bytes in a message): one user's process
# failed every user's view (their loops all read the machine themselves, or failed without NVML)
LONG=$(head -c 102400 /dev/zero | tr '\0' ' ')
bash -c 'exec -a "x$0" "$@"' "$LONG" "$WL" --mode ignore --mem 700 & P=$!
await_workload $P
GPUCTL_SNAPSHOT=0 "$GPUCTL" status --json >"$TMP/direct" 2>"$TMP/direct.err"; drc=$?
GPUCTL_NVML_LIBRARY=$NONVML "$GPUCTL" status --json >"$TMP/snap" 2>"$TMP/snap.err"; src=$?
check_eq "status --json via the snapshot: exit as direct" "$drc" "$src"
if [ -s "$TMP/snap" ] && cmp -s "$TMP/direct" "$TMP/snap"; then
	ok "status --json via the snapshot is the direct output with a 100 KiB command line"
else
	not_ok "status --json via the snapshot is the direct output with a 100 KiB command line" \
		"$(head -c 300 "$TMP/snap.err")" "$(wc -c <"$TMP/snap") vs $(wc -c <"$TMP/direct") bytes"
fi
cut=$(grep -ao '"x *\.\.\."' "$TMP/snap" | head -1)
check "the command line is cut at 4 KiB and says so (\"...\")" test -n "$cut" -a "${#cut}" -le 4098
kill_dead $P
daemon_stop
