#!/usr/bin/env bash
# t5031-review.sh: a second reviewer's attacks on the container features, end to end: a lease's
# container process is the client's word, so a user who names another user's process that
# started before the lease (root's long-running container's init, here pid 1) has it refused,
# and `leases` does not say their lease is held by that container; one started after the lease
# is named. The client runs as nobody (as a user other than root when the tests are not root's).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 7
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
use_state
daemon_setup
daemon_start

# A client that takes a lease and commits it naming BOUND as its container's process; holds the
# lease until stdin closes. BOUND "new": a process started after the lease was taken.
cat >"$TMP/bind.py" <<'PY'
import array, os, socket, subprocess, sys, time
path, bound = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
s.send(b"acquire\nid 1\ncount 1\nkind run\nname review")
r = s.recv(70000)
offer = [l.split(b" ")[1] for l in r.split(b"\n") if l.startswith(b"offer ")][0]
s.send(b"take\nid 1\noffer " + offer)
fds = array.array("i")
msg, anc, _, _ = s.recvmsg(70000, socket.CMSG_SPACE(8 * fds.itemsize))
words = dict(l.split(b" ", 1) for l in msg.split(b"\n")[1:] if b" " in l)
child = None
gone = bound == "gone"
if bound in ("new", "gone"):
    time.sleep(0.1)
    child = subprocess.Popen(["sleep", "600"])
    bound = str(child.pid)
s.send(b"commit\nlease " + words[b"lease"] + b"\ntoken " + words[b"token"] + b"\nbound " +
       bound.encode())
answer = s.recv(70000).split(b"\n")[0].decode()
if gone:  # the bound process exits, the lease lives on (a holder that does not end it)
    child.kill()
    child.wait()
    child = None
print(answer, bound, flush=True)
sys.stdin.read()
if child:
    child.kill()
PY
if can_switch; then
	runas=as_nobody
elif [ "$(id -u)" != 0 ]; then
	runas=env
else
	for i in 1 2 3 4 5 6 7; do skip "a lease's bound process, as another user" "needs setpriv to change users"; done
	exit 0
fi
hold() {
	rm -f "$TMP/in"
	mkfifo "$TMP/in"
	$runas python3 -c "$(cat "$TMP/bind.py")" "$GPUCTL_SOCKET" "$1" <"$TMP/in" >"$TMP/hold.out" 2>&1 &
	holder=$!
	exec {hw}>"$TMP/in"
	await_count '.' "$TMP/hold.out" 1
}
hold 1
"$GPUCTL" leases --json >"$TMP/leases.json"
check_grep "a commit naming pid 1 as the container's process is committed" '^ok 1$' "$TMP/hold.out"
check_eq "but leases does not name pid 1 as the lease's container process" "" \
	"$(grep -o '"bound_pid": *1[,}]' "$TMP/leases.json")"
exec {hw}>&-
wait $holder
hold new
pid=$(awk '{print $2}' "$TMP/hold.out")
"$GPUCTL" leases --json >"$TMP/leases.json"
check_grep "one started after the lease is named" "\"bound_pid\": *$pid[,}]" "$TMP/leases.json"
check_grep "the daemon logged the refused one" "bound to pid 1, another user's, which started before the lease" "$DLOG"
exec {hw}>&-
wait $holder
# A pid with no process behind it yet is not named: it would be whoever's process gets it next.
future=$(($(cat /proc/sys/kernel/pid_max) - 7))
hold "$future"
"$GPUCTL" leases --json >"$TMP/leases.json"
check_eq "a commit naming a pid no process has: leases names no bound process" "" \
	"$(grep -o "\"bound_pid\": *$future[,}]" "$TMP/leases.json")"
check_grep "  logged" "bound to pid $future, which does not exist: not named" "$DLOG"
exec {hw}>&-
wait $holder
# Named, then exited: the lease is no longer said to be bound to it (nor to a process that
# takes its pid next).
hold gone
pid=$(awk '{print $2}' "$TMP/hold.out")
"$GPUCTL" leases --json >"$TMP/leases.json"
check_eq "a bound process that exited is no longer named" "" "$(grep -o "\"bound_pid\": *$pid[,}]" "$TMP/leases.json")"
exec {hw}>&-
wait $holder
