#!/usr/bin/env bash
# t2048-run-spawn.sh: `gpuctl run`'s job start (issue 22: cloned without copying gpuctl, it
# commits its lease itself on run's connection, lease/spawn.c) at its edges:
# - an empty command name is not looked up in PATH: 127, as execvp, env and the shell say;
# - a signal sent to `run` while its job commits (the daemon slow to answer: strace delays the
#   job's send) is passed on to the job once it runs, not dropped;
# - a commit answered after the job stopped waiting for it (strace makes the job's wait return
#   at once) does not pass for the idle watch's answer: the lease is still watched, and
#   released for idleness under the running job (which gets SIGTERM), as any run's is.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 5
quiet_machine "$TMP/m2" 2
use_machine "$TMP/m2"
daemon_setup
G=$GPUCTL
printf '[daemon]\nidle_warn = 1s\nidle_release = 2s\nusage_poll = 0.2s\nkill_grace = 1s\n' >"$TMP/daemon.conf"
daemon_start

check_exit "an empty command name: 127" 127 "$G" run -q -g 0 -- ""
check_grep "an empty command name: the error says so" "cannot run '': No such file or directory" \
	"$TMP/stderr"

# LeakSanitizer cannot run under ptrace (make asan): no leak check for the traced runs.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
if ! command -v strace >/dev/null; then
	skip "signals and late answers during the job's commit" "no strace" 3
	exit 0
fi
# The job's commit delayed 8 s (strace counts per process: run's first sendmsg is its request,
# the job's first its commit).
timeout 60 strace -f -o /dev/null -e trace=sendmsg -e inject=sendmsg:delay_enter=8000000:when=1 \
	"$G" run -q -g 0 -- sleep 40 &
TR=$!
# run is strace's gpuctl (timeout, strace, run) whose child is still gpuctl (the job before its
# exec): one ps a look.
runpid=
end=$((SECONDS + 40))
while [ -z "$runpid" ] && [ $SECONDS -lt $end ] && kill -0 $TR 2>/dev/null; do
	runpid=$(ps -eo pid=,ppid=,comm= | awk -v tr=$TR '
		{ par[$1] = $2; comm[$1] = $3 }
		END { for (p in par) { r = par[p]; s = par[r]
			if (comm[p] == "gpuctl" && comm[r] == "gpuctl" && comm[s] == "strace" && par[s] == tr) print r } }')
	[ -n "$runpid" ] || sleep 0.05
done
if [ -n "$runpid" ]; then
	ok "the job was seen committing"
	kill -TERM "$runpid"
	wait $TR
	check_eq "a SIGTERM sent to run while its job committed reaches the job (143)" 143 $?
else
	skip "a SIGTERM sent to run while its job committed" "the job's commit was not seen (a loaded machine?)" 2
	kill $TR 2>/dev/null
	wait $TR
fi
wait_leases 0

# The job's wait for its commit's answer (its first poll) returns at once: the answer comes later.
timeout 60 strace -f -o /dev/null -e trace=poll -e inject=poll:retval=0:when=1 \
	"$G" run -g 0 -- sleep 40 2>"$TMP/late.err"
check_eq "a commit answered late: the lease is still watched, and released for idleness (143)" \
	143 $?
