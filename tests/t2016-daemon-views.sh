#!/usr/bin/env bash
# t2016-daemon-views.sh: what the lease views say when the daemon's word is missing or weak:
# status with a stopped daemon shows the GPUs after a short wait of its own for the leases and
# says, in the table, that they are not shown; a daemon whose state file system is full tells
# `leases`, which warns, naming the state directory and the error, until a write works again;
# `leases` names a lease's holder only while it is the process that committed it.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 19
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
use_state
daemon_setup
# The state directory on a file system of its own, 64 KiB, so that it can be filled.
mkdir -m 700 "$DRUN/state"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k,mode=0700 gpuctl-t2016 "$DRUN/state" 2>/dev/null; then
	SMALL=1
	chown "$DUSER": "$DRUN/state"
	trap 'main_shell && { cleanup_jobs; umount -l "$DRUN/state" 2>/dev/null; finish_script; }' EXIT
else
	SMALL=
fi
daemon_start

# A stopped daemon (SIGSTOP): status does not wait the client's 5 s for the leases.
kill -STOP "$DAEMON"
timeout 60 "$GPUCTL" status >"$TMP/out" 2>"$TMP/err"
check_eq "status with a stopped daemon: the GPUs are shown" "0:2" "$?:$(grep -c 'H100' "$TMP/out")"
check_grep "the table says the leases are not shown, after a wait of 1 s" \
	"^  leases: not shown, the gpuctl daemon \(pid $DAEMON, .*\) did not answer within 1 s" "$TMP/out"
check_grep "and stderr says so" "^gpuctl status: leases not shown: .*did not answer within 1 s" "$TMP/err"
timeout 60 "$GPUCTL" status --json >"$TMP/out" 2>/dev/null
check_eq "status --json: leases_error says why every lease is null" "[2,true]" \
	"$(jqv '[(.gpus | length), (.leases_error | test("did not answer within 1 s"))]')"
kill -CONT "$DAEMON"
"$GPUCTL" status >"$TMP/out" 2>"$TMP/err"
check_eq "an answering daemon: no such line" "0:0:" "$?:$(grep -c 'leases: not shown' "$TMP/out"):$(cat "$TMP/err")"
check_eq "nor leases_error" "null" "$("$GPUCTL" status --json | jq -c .leases_error)"

# A full state file system: the queue cannot be saved; leases says so.
if [ -n "$SMALL" ]; then
	mkfifo "$TMP/go"
	"$GPUCTL" run -q -n 2 --name hold -- "$B/workload" --log "$TMP/log" --tag hold --until "$TMP/go" &
	hold=$!
	await_line '^start hold' "$TMP/log"
	dd if=/dev/zero of="$DRUN/state/fill" bs=4k 2>/dev/null
	"$GPUCTL" run -q -n 1 --wait -- true &
	waiter=$!
	wait_queue 1
	unsaved() { "$GPUCTL" leases 2>&1 >/dev/null | grep -q 'cannot save its state'; }
	wait_for unsaved
	"$GPUCTL" leases >/dev/null 2>"$TMP/err"
	check_grep "leases warns that the daemon cannot save its state, naming the directory and the error" \
		"^gpuctl leases: warning: the gpuctl daemon cannot save its state \(cannot write $DRUN/state/queue: No space left on device\)" "$TMP/err"
	check_eq "leases --json says so too" "\"cannot write $DRUN/state/queue: No space left on device\"" \
		"$("$GPUCTL" leases --json 2>/dev/null | jq -c .state_unsaved)"
	check_grep "the daemon's log too" "cannot write $DRUN/state/queue: No space left on device" "$DLOG"
	rm -f "$DRUN/state/fill"
	echo go >"$TMP/go"
	wait $hold
	wait $waiter
	check_eq "with room again, the waiter was served (its lease record written)" 0 "$?"
	"$GPUCTL" leases --json >"$TMP/out" 2>"$TMP/err"
	check_eq "and the warning is gone" "null:" "$(jqv .state_unsaved):$(cat "$TMP/err")"
else
	skip "a full state file system" "needs root to mount a small tmpfs" 5
fi

# A job's shell that exited, leaving a background child that holds the lease: leases and release
# do not call the shell's dead pid a running job, and name the child that holds it.
n=$(count_lines "$SLEEPER_READY" '^[0-9]+$')
"$GPUCTL" run -q -n 1 --name bg -- sh -c '"$0" >/dev/null 2>&1 & echo $$ >"$1"' "$B/sleeper" "$TMP/shpid"
await_count '^[0-9]+$' "$SLEEPER_READY" $((n + 1))
bg=$(grep -E '^[0-9]+$' "$SLEEPER_READY" | sed -n "$((n + 1))p")
sh=$(cat "$TMP/shpid")
"$GPUCTL" leases >"$TMP/out" 2>&1
check_grep "leases: the job's shell exited, the child holding the lease is named" \
	"^ +holder $sh exited; held by pid $bg\$" "$TMP/out"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases --json: holder_alive false, the live holder" "[false,[$bg]]" \
	"$(jqv '.leases[] | select(.name == "bg") | [.holder_alive, .live_holders]')"
id=$(jq -r '.leases[] | select(.name == "bg") | .id' "$TMP/out")
check_exit "release of the job's lease is refused" 12 "$GPUCTL" release --lease "$id"
check_grep "naming the holder to end, not the dead shell as a running job" \
	"whose process \(pid $sh: .*\) has exited; pid $bg, which it started, still holds it.*kill --pid $bg" "$TMP/stderr"
m=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
kill "$bg"
check "the lease ends with that child" await_count 'lease [0-9a-f]+ ended' "$DLOG" $((m + 1))

# A commit on a connection whose process has exited (its pid free to be reused), or now runs as
# another user (as a reused pid would): refused, so that no other process is ever recorded as
# the holder.
commit_other() {
	rm -f "$TMP/c-in"
	mkfifo "$TMP/c-in"
	python3 "$ROOT/tests/helper/commit_other.py" "$GPUCTL_SOCKET" "$@" <"$TMP/c-in" >"$TMP/c-out" 2>&1 &
	other=$!
	exec {cw}>"$TMP/c-in"
	await_count '.' "$TMP/c-out" 2
}
commit_other exited
check_grep "a commit on a connection whose process has exited is refused" '^error' "$TMP/c-out"
check_grep "the daemon logs why" 'commit of lease [0-9a-f]+ from pid [0-9]+, which has exited or now runs as another user' "$DLOG"
exec {cw}>&-
wait $other
if can_switch; then
	commit_other uid 65534
	check_grep "so is one from a process that runs as another user now" '^error' "$TMP/c-out"
	exec {cw}>&-
	wait $other
else
	skip "a commit from a process now another user's" "needs root to change users"
fi
