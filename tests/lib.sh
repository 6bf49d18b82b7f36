# tests/lib.sh: helpers for the end-to-end scripts (git t/ style): each script runs in a private
# temp dir and prints "ok - ..." / "not ok - ..." / "skip - ..." lines that tests/run.sh counts.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$ROOT/${GPUCTL_BUILD:-build}
GPUCTL=$B/gpuctl
FAKE=$B/fakenvml/libnvidia-ml.so.1
FAKE_OLD=$B/fakenvml-old/libnvidia-ml.so.1
FAKE_R535=$B/fakenvml-r535/libnvidia-ml.so.1
MACHINES=$ROOT/tests/machines
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER NO_COLOR COLUMNS
export GPUCTL_NVML_LIBRARY=$FAKE

# use_machine FILE [LIB]: point gpuctl at a simulated machine.
use_machine() {
	export FAKENVML_MACHINE=$1
	export GPUCTL_NVML_LIBRARY=${2:-$FAKE}
}

ok() { echo "ok - $1"; }
not_ok() {
	echo "not ok - $1"
	shift
	[ $# -gt 0 ] && printf '#   %s\n' "$@"
	return 0
}
skip() { echo "skip - $1: $2"; }

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

# check_exit NAME CODE CMD...: passes when CMD exits with CODE; its stderr is kept in $TMP/stderr.
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

# jqv FILTER: read JSON from $TMP/out and print the filter's result (compact).
jqv() { jq -c "$1" "$TMP/out"; }

# Background processes a test starts are ended with it.
cleanup_jobs() { local p; p=$(jobs -p); [ -n "$p" ] && kill $p 2>/dev/null; wait 2>/dev/null; }
trap 'cleanup_jobs; rm -rf "$TMP"' EXIT

# spawn ARGV0 [ARGS...]: start a process whose command line is exactly ARGV0 ARGS... and that
# waits to be killed; its pid is left in $SPAWNED.
spawn() {
	local a0=$1; shift
	bash -c 'a0=$1; shift; exec -a "$a0" "$0" "$@"' "$B/sleeper" "$a0" "$@" &
	SPAWNED=$!
	local i; for i in $(seq 200); do
		[ "$(head -c 4096 /proc/$SPAWNED/cmdline 2>/dev/null | tr -d '\0' | head -c ${#a0})" = "$a0" ] && break
		sleep 0.01
	done
}

# gen_machine FILE NGPUS NPROCS [PID...]: an H100 machine with NPROCS processes spread over the
# GPUs, using the given live pids in turn and fictional ones after them.
gen_machine() { bash "$ROOT/tests/gen-machine.sh" "$@"; }

# use_state: a private lease directory and simulated process directory for this test.
use_state() {
	export GPUCTL_STATE_DIR=$TMP/state FAKENVML_PROC_DIR=$TMP/procs
	export GPUCTL_SYSTEM_CONFIG=$TMP/gpuctl.conf XDG_CONFIG_HOME=$TMP/xdg
	mkdir -p "$FAKENVML_PROC_DIR" && chmod 1777 "$FAKENVML_PROC_DIR"
}

# wait_for CMD...: retry CMD for up to 5 s.
wait_for() {
	local i; for i in $(seq 250); do "$@" >/dev/null 2>&1 && return 0; sleep 0.02; done
	return 1
}

# live_leases: number of live leases.
live_leases() { "$GPUCTL" leases --json | jq '.leases | length'; }

# wait_leases N: wait (up to 5 s) until exactly N leases are live.
wait_leases() {
	local i; for i in $(seq 250); do [ "$(live_leases)" = "$1" ] && return 0; sleep 0.02; done
	return 1
}

# quiet_machine FILE N: N idle H100s (no memory used, no load).
quiet_machine() {
	gen_machine "$1" "$2" 0
	sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$1"
}
