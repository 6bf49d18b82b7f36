# tests/lib/jobs.sh: helpers for the detached-job scripts (source after lib.sh and daemon.sh).
# Each user's jobs live in $XDG_STATE_HOME/gpuctl/jobs/HOST; the runner logs each step there
# (runner.log: "job N started", "job N ended: ..."), which the scripts await as events.

HOSTDIR=$(hostname | sed 's/[^A-Za-z0-9._-]/_/g; s/^\./_/')
jobs_dir() { echo "${1:-$XDG_STATE_HOME}/gpuctl/jobs/$HOSTDIR"; }
runner_log() { echo "$(jobs_dir "${1:-}")/runner.log"; }

# The second user's own state directory; as_nb runs a command as that user with it.
NB_STATE=$TMP/nobody-state
mkdir -p "$NB_STATE"
chown 65534:65534 "$NB_STATE" 2>/dev/null
as_nb() { as_nobody env XDG_STATE_HOME="$NB_STATE" "$@"; }

# await_started ID [STATE_HOME] / await_ended ID [STATE_HOME]: the runner says so.
await_started() { await_line "^gpuctl runner: job $1 started" "$(runner_log "${2:-}")"; }
await_ended() { await_line "^gpuctl runner: job $1 ended" "$(runner_log "${2:-}")"; }

# job_field ID FILTER: a field of `gpuctl jobs --json ID` (jq filter on the job).
job_field() { "$GPUCTL" jobs --json "$1" | jq -c ".jobs[0] | $2"; }

# runner_pid [STATE_HOME]: the pid of the runner that started last (its log says).
runner_pid() { sed -n 's/^gpuctl runner: pid \([0-9]*\) serving.*/\1/p' "$(runner_log "${1:-}")" | tail -1; }

# jobs_yield: this script, its daemon, runners and jobs run at a lower priority (nice 10): their
# hundreds of job starts are background load for the suite's latency checks (t2002), which
# measure what a waiter sees, not how busy the machine is.
jobs_yield() { renice -n 10 -p $$ >/dev/null 2>&1 || true; }

# At the end of the script, before lib.sh removes $TMP: the runners and jobs this script started
# (in sessions of their own, out of reach of the runner's process-group kill) are killed, each
# only after its environment shows it is this script's (XDG_STATE_HOME), never on a pid alone.
jobs_cleanup() {
	local home d p
	for home in "$XDG_STATE_HOME" "$NB_STATE" "$TMP"/*-state; do
		d=$(jobs_dir "$home")
		[ -d "$d" ] || continue
		for p in $(sed -n 's/^gpuctl runner: pid \([0-9]*\) serving.*/\1/p' "$d/runner.log" 2>/dev/null) \
			$(awk '$1 == "pid" {print $2}' "$d"/*.job 2>/dev/null); do
			tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "XDG_STATE_HOME=$home" &&
				kill -KILL "$p" 2>/dev/null
		done
	done
}
trap 'main_shell && { jobs_cleanup; finish_script; }' EXIT
