#!/usr/bin/env bash
# t3004-jobs-daemon-down.sh: `jobs --all` when the shared daemon cannot be asked (stopped, or
# not answering) says so and exits 13, showing the user's own jobs from their records, never
# "no jobs" as if no one else had any; a killed daemon is known at once (nothing listens), a
# stopped one after the client's timeout. Without a shared daemon, a script's submits say once
# that leases are private.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
jobs_yield
plan 11
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
daemon_start
G=$GPUCTL

# Nothing listens (the daemon was stopped; its socket refuses).
daemon_stop
check_exit "jobs --all, the daemon not running: exit 13" 13 "$G" jobs --all
check_grep "saying other users' jobs could not be had, and why" \
	"^gpuctl jobs: other users' jobs and the queue could not be had: cannot reach the gpuctl daemon at $GPUCTL_SOCKET: Connection refused" "$TMP/stderr"
check_eq "and not 'no jobs'" "" "$(cat "$TMP/stdout")"

# With a job of the user's own: it is still listed, from its record.
daemon_start
id=$("$G" submit -- true)
"$G" wait "$id" >/dev/null 2>&1
check_eq "a job of one's own ran" 0 "$?"
daemon_stop
check_exit "jobs --all: exit 13 still" 13 "$G" jobs --all
check_grep "one's own job listed" "^ *$id .*done" "$TMP/stdout"
check_exit "plain jobs needs no daemon for finished jobs" 0 "$G" jobs

# A stopped daemon (SIGSTOP): after the client's timeout, saying so.
daemon_start
kill -STOP "$DAEMON"
GPUCTL_DAEMON_TIMEOUT=1 check_exit "jobs --all, the daemon stopped: exit 13" 13 timeout 60 "$G" jobs --all
check_grep "it did not answer" "could not be had: the gpuctl daemon \(pid $DAEMON, .*\) did not answer within 1 s" "$TMP/stderr"
kill -CONT "$DAEMON"

# No shared daemon installed: a script's submits say once that leases are private, not each
# (a user of their own, so that a runner of their own starts, in this environment).
export GPUCTL_SOCKET=$TMP/none/gpuctl.sock XDG_STATE_HOME=$TMP/p-state
mkdir -p "$XDG_STATE_HOME"
for i in 1 2 3; do "$G" submit -- true >>"$TMP/ids" 2>>"$TMP/sub.err"; done
check_eq "three submits with private leases" 3 "$(grep -cE '^[0-9]+$' "$TMP/ids")"
check_eq "say so once in their session" 1 "$(grep -c 'no gpuctl daemon at' "$TMP/sub.err")"
for id in $(cat "$TMP/ids"); do "$G" wait "$id" >/dev/null 2>&1; done
