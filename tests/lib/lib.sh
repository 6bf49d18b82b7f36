# tests/lib/lib.sh: what the end-to-end scripts share (git t/ style). A script sources it, says how
# many checks it will make (`plan N`), and makes them; each prints a TAP line, "ok - NAME" or
# "not ok - NAME" (a skip is "ok - NAME # SKIP why"). tests/run.sh runs the scripts concurrently
# and holds each to its plan: a script that dies early fails, it does not pass fewer checks.
#
# Hermetic: each script has a private temp dir holding its configuration, state, runtime dir and
# socket path; /etc/gpuctl.conf, ~/.config and /run/lock are never read.
# Event-driven: a test waits for what it needs (a line in a file, a process's end) with a deadline
# that only a failure reaches, never for a fixed time.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/${GPUCTL_BUILD:-build}
GPUCTL=$B/gpuctl
FAKE=$B/fakenvml/libnvidia-ml.so.1
FAKE_OLD=$B/fakenvml-old/libnvidia-ml.so.1
FAKE_R535=$B/fakenvml-r535/libnvidia-ml.so.1
MACHINES=$ROOT/tests/fake/machines
# A staged run (tests/run.sh) compares with, and GOLDEN_UPDATE=1 rewrites, the checkout's own.
GOLDEN=${GPUCTL_TEST_STAGED:-$ROOT}/tests/golden
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-test.XXXXXX")
# Everything this script starts carries the mark (tests/lib/sweep.sh; finish_script below).
. "$ROOT/tests/lib/sweep.sh"
export GPUCTL_TEST_SCRIPT=$TMP
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER NO_COLOR COLUMNS GPUCTL_CUDA_LIBRARY GPUCTL_DAEMON_TIMEOUT
# Not inside a Slurm job, whatever the machine runs (t4001 makes its own jobs).
unset SLURM_JOB_ID SLURM_STEP_ID SLURM_JOB_GPUS SLURM_STEP_GPUS SLURMD_NODENAME
export GPUCTL_NVML_LIBRARY=$FAKE
export HOME=$TMP/home XDG_CONFIG_HOME=$TMP/xdg/config XDG_STATE_HOME=$TMP/xdg/state
export XDG_RUNTIME_DIR=$TMP/xdg/run GPUCTL_STATE_DIR=$TMP/state GPUCTL_SOCKET=$TMP/gpuctl.sock
export GPUCTL_CONFIG_NOSYSTEM=1
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
# Test helpers announce themselves here once they are ready (sleeper: "PID"; workload:
# "ready PID", once it is in the simulated process list). Writable by the second user too.
export SLEEPER_READY=$TMP/sleeper.ready WORKLOAD_READY=$TMP/workload.ready
: >"$SLEEPER_READY"; : >"$WORKLOAD_READY"; chmod 666 "$SLEEPER_READY" "$WORKLOAD_READY"

# plan N: the number of checks this script makes, whichever branches it takes.
plan() { echo "1..$1"; }

ok() { echo "ok - $1"; }
not_ok() {
	echo "not ok - $1"
	shift
	[ $# -gt 0 ] && printf '#   %s\n' "$@"
	return 0
}
# skip NAME WHY [N]: N checks (default 1) that cannot run here, counted as skipped.
skip() { local i; for ((i = 0; i < ${3:-1}; i++)); do echo "ok - $1 # SKIP $2"; done; }

# use_machine FILE [LIB]: point gpuctl at a simulated machine.
use_machine() {
	export FAKENVML_MACHINE=$1
	export GPUCTL_NVML_LIBRARY=${2:-$FAKE}
}

# check NAME CMD...: passes when CMD exits 0.
check() {
	local name=$1; shift
	local out
	if out=$("$@" 2>&1); then ok "$name"; else not_ok "$name" "command: $*" "$out"; fi
}

# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" == "$3" ]; then ok "$1"; else not_ok "$1" "expected: $2" "actual:   $3"; fi
}

# check_exit NAME CODE CMD...: passes when CMD exits with CODE; its output is kept in
# $TMP/stdout and $TMP/stderr.
check_exit() {
	local name=$1 want=$2; shift 2
	"$@" >"$TMP/stdout" 2>"$TMP/stderr"
	local rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$name"; else
		not_ok "$name" "expected exit $want, got $rc: $*" "$(head -c 2000 "$TMP/stderr")"
	fi
}

# check_grep NAME PATTERN FILE: passes when the extended regex matches a line of FILE.
check_grep() {
	if grep -aEq -- "$2" "$3"; then ok "$1"; else not_ok "$1" "no line matches: $2" "$(head -c 2000 "$3")"; fi
}

# check_golden NAME GOLDEN ACTUAL: passes when the file ACTUAL equals tests/golden/GOLDEN.
# GOLDEN_UPDATE=1 rewrites the golden file instead (then review the diff before committing).
check_golden() {
	if [ -n "${GOLDEN_UPDATE:-}" ]; then cp "$3" "$GOLDEN/$2"; fi
	local d
	if d=$(diff -u "$GOLDEN/$2" "$3" 2>&1); then ok "$1"; else not_ok "$1" "$(head -40 <<<"$d")"; fi
}

# jqv FILTER: read JSON from $TMP/out and print the filter's result (compact).
jqv() { jq -c "$1" "$TMP/out"; }

# await_count PATTERN FILE N [SECONDS]: wait until N lines of FILE match the extended regex (lines
# written before the call count too: so FILE must be new, or the caller counts what is there
# first): tests/helper/await-line, which a job a script runs can call too ("$AWAIT_LINE").
export AWAIT_LINE=$ROOT/tests/helper/await-line AWAIT_EXIT=$ROOT/tests/helper/await-exit
await_count() { "$AWAIT_LINE" "$1" "$2" "$3" "${4:-60}"; }
# await_line PATTERN FILE [SECONDS]: one such line (a `>FILE &` truncates FILE only when the
# background child gets to it: await a fresh file).
await_line() { await_count "$1" "$2" 1 "${3:-60}"; }

# await_workload PID: the test workload PID is in the simulated process list.
await_workload() { await_line "^ready $1\$" "$WORKLOAD_READY"; }

# spawn ARGV0 [ARGS...]: start a process whose command line is exactly ARGV0 ARGS... and that
# waits to be killed; returns once it runs under that name (its pid is in $SPAWNED).
spawn() {
	local a0=$1; shift
	bash -c 'a0=$1; shift; exec -a "$a0" "$0" "$@"' "$B/sleeper" "$a0" "$@" &
	SPAWNED=$!
	await_line "^$SPAWNED\$" "$SLEEPER_READY"
}

# start_exporter [OPTIONS]: gpuctl exporter in the background ($EXP) on a port the kernel chooses
# (--listen ...:0; the log line says which: $PORT), so concurrent tests never collide on a port.
# free_port: a free TCP port on loopback below the kernel's ephemeral range, for a server a script
# starts (Slurm, Prometheus): a port the kernel chose (bind to 0) is free only until the server
# binds it, and other scripts' thousands of connections (the
# exporter's and the daemon's floods) take ephemeral ports meanwhile ("Address already in use").
free_port() {
	python3 -c '
import random, socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    p = random.randrange(10000, max(lo, 10001))
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break'
}
start_exporter() {
	rm -f "$TMP/exporter.log" # the last one's "serving" line must not be mistaken for this one's
	"$GPUCTL" exporter --listen 127.0.0.1:0 "$@" 2>"$TMP/exporter.log" &
	EXP=$!
	await_line 'serving http://|cannot' "$TMP/exporter.log"
	PORT=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$TMP/exporter.log")
}
stop_exporter() { kill $EXP; wait $EXP; }

# gen_machine FILE NGPUS NPROCS [PID...]: an H100 machine with NPROCS processes spread over the
# GPUs, using the given live pids in turn and fictional ones after them.
gen_machine() { bash "$ROOT/tests/fake/gen-machine.sh" "$@"; }

# quiet_machine FILE N: N idle H100s (no memory used, no load).
quiet_machine() {
	gen_machine "$1" "$2" 0
	sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$1"
}

# use_state: a simulated process directory for the workload. Leasing without a daemon started
# by the script uses this user's private daemon, in $GPUCTL_STATE_DIR (tests/lib/daemon.sh starts a
# shared one).
use_state() {
	export FAKENVML_PROC_DIR=$TMP/procs
	mkdir -p "$FAKENVML_PROC_DIR" && chmod 1777 "$FAKENVML_PROC_DIR"
}

# Helpers that poll, for what tells no one when it happens (a count in `gpuctl leases`, a state in
# /proc). Their deadline (30 s unless told) is reached only when something is wrong.
# wait_for CMD...: retry CMD until it succeeds.
wait_for() {
	local end=$((SECONDS + 30))
	until "$@" >/dev/null 2>&1; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}
# kill_dead PID...: SIGKILL, then until each is dead (gone, or a zombie its parent has not
# reaped), as its pidfd tells (tests/helper/await-exit): kill(2) only queues the signal, and a
# process not yet dead still holds its socket, so a command run at once could still reach it.
kill_dead() { kill -KILL "$@" 2>/dev/null; "$AWAIT_EXIT" 30 "$@"; }
live_leases() { "$GPUCTL" leases --json | jq '.leases | length'; }
queue_len() { "$GPUCTL" leases --json | jq '.queue | length'; }
# wait_queue N [SECONDS]: until the daemon has N waiters: the daemon logs no line when a request
# joins the queue, so its length is asked.
wait_queue() {
	local end=$((SECONDS + ${2:-30}))
	until [ "$(queue_len)" = "$1" ]; do [ $SECONDS -ge $end ] && return 1; sleep 0.01; done
}
# wait_leases N: until N leases are live.
wait_leases() {
	local end=$((SECONDS + 30))
	until [ "$(live_leases)" = "$1" ]; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}

# Background processes a test starts end with it. Only the script's own shell cleans up: a subshell
# that ends before it has exec'd (await_line's tail, a watchdog `( sleep; kill ) &` killed at once)
# must not remove $TMP. main_shell asks the kernel which process runs it (/proc/self, opened by
# this shell itself): bash's $BASHPID is stale in a subshell killed just after its fork, whose
# EXIT trap then ran as the script's and removed $TMP under it (t4003 lost 18 checks so).
main_shell() { local me _; read -r me _ </proc/self/stat; [ "$me" = "$$" ]; }
cleanup_jobs() { local p; p=$(jobs -p); [ -n "$p" ] && kill $p 2>/dev/null; wait 2>/dev/null; }
# finish_script: the script's last step, from its EXIT trap: its background jobs, then whatever
# it started that left its process group (a private daemon lingering, a job runner), then $TMP.
finish_script() { cleanup_jobs; sweep_stop "GPUCTL_TEST_SCRIPT=$TMP" >/dev/null; rm -rf "$TMP"; }
trap 'main_shell && finish_script' EXIT
# A TERM (tests/run.sh's timeout or Ctrl-C) or INT ends the script through its EXIT trap, which
# stops what it started (daemons, tmux, Slurm) instead of leaving them behind.
trap 'exit 143' TERM
trap 'exit 130' INT
