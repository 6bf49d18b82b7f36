#!/usr/bin/env bash
# t2014-one-daemon.sh: one daemon per socket (issue 21, item 10). A second daemon with another
# state directory used to unlink the live socket and listen in its place: the clients of each then
# saw a different lease table, and two users held one GPU. Now it refuses, naming the daemon that
# serves (SOCKET.lock, flock'ed for the daemon's life), and so does a daemon facing a socket that
# still answers without the lock (a daemon of an older gpuctl); a stale socket is still replaced.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 12
use_machine "$MACHINES/h100x8.machine"
daemon_setup
daemon_start
sock_ino() { stat -c %i "$GPUCTL_SOCKET"; }
ino=$(sock_ino)

# A second daemon, its own state directory and log, on the same socket: as its user, so that only
# the lock (not a permission) stops it.
second() {
	if [ "$DUSER" = "$(id -un)" ]; then
		timeout 60 "$GPUCTL" daemon --socket "$GPUCTL_SOCKET" --state-dir "$DRUN/state2" \
			--config "$TMP/daemon.conf" "$@"
	else
		timeout 60 setpriv --reuid="$DUSER" --regid="$DUSER" --clear-groups "$GPUCTL" daemon \
			--socket "$GPUCTL_SOCKET" --state-dir "$DRUN/state2" --config "$TMP/daemon.conf" "$@"
	fi
}
second >"$TMP/out2" 2>"$TMP/err2"
check_eq "a second daemon on a live socket exits 1" 1 $?
check_grep "naming the daemon that serves it and what to do" \
	"another gpuctl daemon \(pid $DAEMON\) already serves $GPUCTL_SOCKET .*stop it first" "$TMP/err2"
check_eq "the live socket was left alone" "$ino" "$(sock_ino)"
check "the second daemon touched no state of its own" test ! -e "$DRUN/state2"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "clients still reach the first daemon" "$DAEMON" "$(jqv .daemon_pid)"

# A lease held through the first daemon is still seen by everyone: nobody gets its GPU twice.
mkfifo "$TMP/go"
"$GPUCTL" run -q -g 1 --ignore-usage -- sh -c 'read x <"$0"' "$TMP/go" &
job=$!
wait_granted 1
check_exit "the held GPU is refused to the next client" 10 "$GPUCTL" run -g 1 --ignore-usage -- true

# Stopped, the first daemon still owns its socket: the second waits for nothing and says so.
kill -STOP "$DAEMON"
second >"$TMP/out2" 2>"$TMP/err2"
check_eq "a stopped daemon's socket is not taken either" 1 $?
kill -CONT "$DAEMON"
check_exit "and the first daemon serves on" 0 "$GPUCTL" leases
echo go >"$TMP/go"
wait $job

# Killed, it leaves a stale socket: the next daemon replaces it.
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null
daemon_start
check "after a killed daemon the next one starts (stale socket replaced)" kill -0 "$DAEMON"
check_exit "and serves" 0 "$GPUCTL" run -q -g 1 --ignore-usage -- true
daemon_stop

# A socket that answers with no lock held (an older gpuctl's daemon): refused as well.
rm -f "$GPUCTL_SOCKET"
python3 -c '
import socket, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(16)
print("listening", flush=True)
s.accept()[0].recv(1)' "$GPUCTL_SOCKET" >"$TMP/listener" &
lst=$!
await_line '^listening' "$TMP/listener"
second >"$TMP/out2" 2>"$TMP/err2"
check_eq "a socket that still answers, unlocked, is refused" 1 $?
check_grep "saying it answers there" "already serves $GPUCTL_SOCKET \(it answers there\)" "$TMP/err2"
kill $lst 2>/dev/null
wait $lst 2>/dev/null || true
