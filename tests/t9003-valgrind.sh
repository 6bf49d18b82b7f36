#!/usr/bin/env bash
# t9003-valgrind.sh: the daemon and the lease clients clean under valgrind (memcheck: no invalid
# access, no uninitialised byte reaching a syscall, no definite leak), through a lease, a queued
# waiter, a listing and a release. t9002 does the same for status. Not here: the job runner and
# `release`'s signalling, which need pidfd_open, a system call Debian 12's valgrind (3.19) does
# not know (it answers ENOSYS, and gpuctl then refuses to signal or to run jobs, as it must).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 9
if [[ ${GPUCTL_BUILD:-build} == *asan* ]]; then
	skip "valgrind" "the ASan build is checked by ASan instead" 9
	exit 0
elif ! command -v valgrind >/dev/null; then
	skip "valgrind" "valgrind is not installed" 9
	exit 0
fi
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
DUSER=$(id -un) # the daemon runs under valgrind as this user: one log file per process
export GPUCTL_DAEMON_TIMEOUT=30 # valgrind makes every answer slow
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect)
# vg NAME CMD...: the command under valgrind, its report in $TMP/vg-NAME.
vg() { local n=$1; shift; "${VG[@]}" --log-file="$TMP/vg-$n" "$@"; }
# clean NAME...: their reports are empty (valgrind -q writes only errors and leaks), but for its
# notice that it does not know pidfd_open ("--PID-- WARNING: unhandled ... syscall: 434").
clean() {
	local n errs=
	for n; do errs+=$(grep -v '^--[0-9]*-- ' "$TMP/vg-$n"); done
	check_eq "valgrind clean: $*" "" "$errs"
}

"${VG[@]}" --log-file="$TMP/vg-daemon" "$GPUCTL" daemon --socket "$GPUCTL_SOCKET" --state-dir "$DRUN/state" \
	--config "$TMP/daemon.conf" >>"$DLOG" 2>&1 &
DAEMON=$!
await_line 'serving' "$DLOG" 120 || { not_ok "the daemon under valgrind started" "$(cat "$DLOG")"; exit 1; }

vg run "$GPUCTL" run -q -n 2 -- true
check_eq "run -n 2 under valgrind" 0 $?
mkfifo "$TMP/go"
"$GPUCTL" run -q -n 4 -- sh -c "read x <'$TMP/go'" & holder=$!
await_count 'lease .*: uid' "$DLOG" 2 60
vg wait "$GPUCTL" run -q -n 1 --wait -- true & waiter=$!
wait_queue 1 120 # the waiter runs under valgrind
vg leases "$GPUCTL" leases --json >"$TMP/out"
check_eq "leases --json: the holder and the waiter" '[1,1]' "$(jqv '[(.leases | length), (.queue | length)]')"
echo go >"$TMP/go"
wait $holder
wait $waiter
check_eq "the waiter ran once the holder ended" 0 $?
vg env "$GPUCTL" env -n 1 --format sh >/dev/null 2>&1
vg table "$GPUCTL" leases >/dev/null
"$GPUCTL" release >/dev/null 2>&1 # natively: it signals through a pidfd
kill -TERM "$DAEMON"
wait "$DAEMON"
check_eq "the daemon under valgrind exits 0 on SIGTERM" 0 $?
clean daemon
clean run
clean wait
clean leases
clean env table
