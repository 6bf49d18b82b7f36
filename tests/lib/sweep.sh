# tests/lib/sweep.sh: the processes a run or a script started, found by a mark in their
# environment (tests/run.sh exports GPUCTL_TEST_RUN, tests/lib/lib.sh GPUCTL_TEST_SCRIPT), which
# every descendant carries, whatever session or process group it moved to (a private daemon, the
# job runner, Slurm's daemons, a tmux server), and which a process cannot shed without an exec
# of its own choosing. Read with builtins only: a process forked for the reading would carry the
# mark too. Root sees every user's; another user only its own.

# sweep NAME=VALUE [SIG]: prints "PID USER COMMAND" for each process (but this shell) whose
# environment holds NAME=VALUE; with SIG, sends it SIG.
sweep() {
	local f env cmd pid mark=$1
	for f in /proc/[0-9]*/environ; do
		pid=${f#/proc/}; pid=${pid%/environ}
		[ "$pid" = "$$" ] && continue
		{ mapfile -d '' env <"$f"; } 2>/dev/null || continue
		[[ " ${env[*]} " == *" $mark "* ]] || continue
		{ mapfile -d '' cmd <"/proc/$pid/cmdline"; } 2>/dev/null
		cmd=("${cmd[@]:0:8}")
		cmd=("${cmd[@]//$'\n'/ }") # one line per process (a `python3 -c` script has several)
		echo "$pid $(stat -c %U "/proc/$pid" 2>/dev/null) ${cmd[*]}"
		[ $# -gt 1 ] && kill "-$2" "$pid" 2>/dev/null
	done
	return 0
}

# sweep_stop NAME=VALUE: TERM to each, then KILL to what is left half a second later (or once
# all have exited, as their pidfds tell); prints what it found.
sweep_stop() {
	local found pid pids=() _
	found=$(sweep "$1" TERM)
	[ -n "$found" ] || return 0
	while read -r pid _; do pids+=("$pid"); done <<<"$found"
	"$(dirname "${BASH_SOURCE[0]}")/../helper/await-exit" 0.5 "${pids[@]}" >/dev/null
	sweep "$1" KILL >/dev/null
	echo "$found"
}
