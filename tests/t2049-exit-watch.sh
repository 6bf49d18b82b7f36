#!/usr/bin/env bash
# t2049-exit-watch.sh: the daemon's view and the exporter watch their GPU processes' exits with
# pidfds (issue 22: one poll a refresh instead of a stat of each /proc/PID): a live process is
# watched and shown with its owner and command line; once it exits, the next refresh shows it
# gone (no owner, no command line: never the dead process's, whoever gets its pid) and its
# descriptor is closed. A status loop whose daemon stops reads the machine itself and watches
# there too. The /proc files a refresh reads are closed in batches (src/machine/proc-read.c):
# after a refresh of 70 live processes, more than two batches, neither the daemon nor the
# exporter holds one open, and each process's command line came through whole.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 18
pidfds() { # pidfds PID: the pidfds PID holds (its /proc/PID/fd links)
	local n=0 f
	for f in /proc/"$1"/fd/*; do [ "$(readlink "$f" 2>/dev/null)" = 'anon_inode:[pidfd]' ] && n=$((n + 1)); done
	echo $n
}
holds() { [ "$(pidfds "$1")" = "$2" ]; } # holds PID N: PID holds N pidfds
procfiles() { # procfiles PID: the files under /proc PID holds open (its /proc itself aside)
	local n=0 f t
	for f in /proc/"$1"/fd/*; do
		t=$(readlink "$f" 2>/dev/null) || continue
		case $t in /proc/[0-9]*) n=$((n + 1)) ;; esac
	done
	echo $n
}
cmd_of() { jq -r '.gpus[0].processes[0] | "\(.user) \(.command)"'; }
sleep 600 & S=$!
gen_machine "$TMP/m1" 1 1 $S
use_machine "$TMP/m1"
daemon_setup
daemon_start
# The daemon's user reads its descriptors only as itself or as root.
readable=1
[ -r "/proc/$DAEMON/fd" ] && ls "/proc/$DAEMON/fd" >/dev/null 2>&1 || readable=0

GPUCTL_SNAPSHOT_AGE=0 "$GPUCTL" status --json >"$TMP/v1" 2>"$TMP/v1.err"
check_eq "the daemon's view: the live process with its owner and command line" \
	"$(id -un) sleep 600" "$(cmd_of <"$TMP/v1")"
if [ $readable = 1 ]; then
	check_eq "the daemon watches it (one pidfd)" 1 "$(pidfds "$DAEMON")"
else
	skip "the daemon watches it" "its descriptors are not readable here"
fi
{ kill_dead $S; wait $S; } 2>/dev/null
GPUCTL_SNAPSHOT_AGE=0 "$GPUCTL" status --json >"$TMP/v2" 2>"$TMP/v2.err"
check_eq "once it exited, the next view shows it gone (no owner, no command line)" "null null" \
	"$(cmd_of <"$TMP/v2")"
if [ $readable = 1 ]; then
	check_eq "and the daemon closed its pidfd" 0 "$(pidfds "$DAEMON")"
else
	skip "and the daemon closed its pidfd" "its descriptors are not readable here"
fi
check_eq "nothing said on stderr" "" "$(cat "$TMP/v1.err" "$TMP/v2.err")"

# The exporter reading the machine itself (no daemon: GPUCTL_SNAPSHOT=0), uncached scrapes.
sleep 600 & S=$!
gen_machine "$TMP/m2" 1 1 $S
use_machine "$TMP/m2"
GPUCTL_SNAPSHOT=0 start_exporter --cache-ms 0
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/x1"
check_eq "the exporter: the live process's command" 1 \
	"$(grep -c "^gpuctl_process_gpu_memory_bytes{.*pid=\"$S\".*command=\"sleep\"" "$TMP/x1")"
check_eq "the exporter watches it (one pidfd)" 1 "$(pidfds "$EXP")"
{ kill_dead $S; wait $S; } 2>/dev/null
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/x2"
check_eq "once it exited, the next scrape names no command for its pid" 0 \
	"$(grep -c "^gpuctl_process_gpu_memory_bytes{.*pid=\"$S\".*command=\"sleep\"" "$TMP/x2")"
check_eq "and the exporter closed its pidfd" 0 "$(pidfds "$EXP")"
stop_exporter

# Many processes: their /proc files are closed in batches, and none stays open after a refresh.
many=()
for ((i = 0; i < 70; i++)); do sleep 600 & many+=($!); done
gen_machine "$TMP/m4" 2 70 "${many[@]}"
use_machine "$TMP/m4"
daemon_stop
daemon_start   # (the daemon reads the machine its environment named at its start)
GPUCTL_SNAPSHOT_AGE=0 "$GPUCTL" status --json >"$TMP/v4" 2>"$TMP/v4.err"
check_eq "70 processes through the daemon: each with its command line" 70 \
	"$(jq '[.gpus[].processes[] | select(.command == "sleep 600")] | length' "$TMP/v4")"
if [ $readable = 1 ]; then
	check_eq "the daemon holds none of their /proc files after the refresh" 0 "$(procfiles "$DAEMON")"
else
	skip "the daemon holds none of their /proc files after the refresh" "its descriptors are not readable here"
fi
GPUCTL_SNAPSHOT=0 start_exporter --cache-ms 0 --max-processes 100
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/x4"
check_eq "70 processes through the exporter: each with its command" 70 \
	"$(grep -c '^gpuctl_process_gpu_memory_bytes{.*command="sleep"' "$TMP/x4")"
check_eq "the exporter holds none of their /proc files after the scrape" 0 "$(procfiles "$EXP")"
stop_exporter
# A one-shot reading the machine itself: every /proc file it opened is closed before it exits
# (what it opened, against what close and close_range closed: strace).
if command -v strace >/dev/null; then
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 GPUCTL_SNAPSHOT=0 \
		strace -qq -o "$TMP/st" -e trace=openat,close,close_range "$GPUCTL" status --json >"$TMP/v5" 2>"$TMP/v5.err"
	opened=$(grep -Ec '^openat\([0-9]+, "[0-9]+/(cmdline|cgroup|comm|stat)".* = [0-9]+$' "$TMP/st")
	fds=$(grep -E '^openat\([0-9]+, "[0-9]+/(cmdline|cgroup|comm|stat)".* = [0-9]+$' "$TMP/st" | sed 's/.* = //' | sort -n | uniq)
	unclosed=
	for fd in $fds; do
		grep -Eq "^close\($fd\) +=  *0\$" "$TMP/st" && continue
		awk -v fd="$fd" -F'[(,)]' '/^close_range\(/ && $2 <= fd && fd <= $3 && / = 0$/ { f = 1 } END { exit !f }' "$TMP/st" &&
			continue
		unclosed="$unclosed $fd"
	done
	[ -z "$unclosed" ] || sed 's/^/# strace: /' "$TMP/st"
	check_eq "a one-shot: each /proc file descriptor it opened was closed ($opened opened; none left)" \
		"" "$unclosed"
	check_eq "  in batches: fewer closing calls than files" 1 \
		"$(( $(grep -Ec '^(close|close_range)\(' "$TMP/st") < opened ))"
else
	skip "a one-shot: each /proc file descriptor it opened was closed" "no strace"
	skip "  in batches: fewer closing calls than files" "no strace"
fi
kill "${many[@]}" 2>/dev/null; wait "${many[@]}" 2>/dev/null

# A loop served by the daemon until it stops: it then reads the machine itself, and watches.
sleep 600 & S=$!
gen_machine "$TMP/m3" 1 1 $S
use_machine "$TMP/m3"
daemon_stop
daemon_start   # (the daemon reads the machine its environment named at its start)
: >"$TMP/loop"
"$GPUCTL" status --json -l 0.2 -c 100 >"$TMP/loop" 2>"$TMP/loop.err" & LOOP=$!
await_line '"command":"sleep 600"' "$TMP/loop"
daemon_stop
wait_for holds $LOOP 1
check_eq "a loop whose daemon stopped watches the process itself" 1 "$(pidfds "$LOOP")"
{ kill_dead $S; wait $S; } 2>/dev/null
wait_for holds $LOOP 0
check_eq "and lets it go when it exits" 0 "$(pidfds "$LOOP")"
kill $LOOP 2>/dev/null
wait $LOOP 2>/dev/null
sed 's/^/# loop: /' "$TMP/loop.err"
check_eq "the loop printed nothing on stderr but why it reads the GPUs itself" "" \
	"$(grep -v -i 'daemon' "$TMP/loop.err")"
