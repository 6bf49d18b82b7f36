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
plan 21
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
# (the trace read in order: a descriptor opened, then closed by close or a close_range over it).
if command -v strace >/dev/null && strace -qq -o /dev/null true 2>/dev/null; then
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 GPUCTL_SNAPSHOT=0 \
		strace -qq -o "$TMP/st" -e trace=openat,close,close_range "$GPUCTL" status --json >"$TMP/v5" 2>"$TMP/v5.err"
	rc=$?
	read -r opened calls left < <(awk '
		/^openat\([0-9]+, "[0-9]+\/(cmdline|cgroup|comm|stat)"/ && $NF ~ /^[0-9]+$/ { open[$NF] = 1; n++ }
		/^close\(/ { calls++; split($0, a, /[()]/); if ($NF == 0) delete open[a[2] + 0] }
		/^close_range\(/ { calls++; split($0, a, /[(,)]/); if ($NF == 0) for (f in open) if (f + 0 >= a[2] + 0 && f + 0 <= a[3] + 0) delete open[f] }
		END { l = ""; for (f in open) l = l "," f; print n + 0, calls + 0, (l == "" ? "-" : substr(l, 2)) }' "$TMP/st")
	check_eq "a one-shot under strace: its output, all 70" "0 70" \
		"$rc $(jq '[.gpus[].processes[] | select(.command == "sleep 600")] | length' "$TMP/v5")"
	check_eq "  each /proc file it opened was closed ($opened opened)" "-" "$left"
	check_eq "  in batches: fewer closing calls than files" 1 "$(( opened > 0 && calls < opened ))"
else
	skip "a one-shot under strace: its output, all 70" "no strace that can trace here"
	skip "  each /proc file it opened was closed" "no strace that can trace here"
	skip "  in batches: fewer closing calls than files" "no strace that can trace here"
fi
# With a limit on descriptors that leaves none to spare, the owners are named as under the usual
# one: the batch is not kept there, and is closed before NSS opens its files. "spare 3": the
# limit leaves three descriptors free (/proc, the file read, NSS's).
GPUCTL_SNAPSHOT=0 "$GPUCTL" status --json 2>/dev/null | jq -c '[.gpus[].processes[] | [.user, .command]]' >"$TMP/u1"
# (NSS modules that keep descriptors of their own, sss, ldap, winbind, need more than one)
spares="3 9"
grep -Eq '^passwd:.*(sss|ldap|winbind|nis)' /etc/nsswitch.conf 2>/dev/null && spares=9
[ "$spares" = 9 ] && skip "a limit that leaves 3 descriptors" "an NSS module that keeps descriptors"
for spare in $spares; do
	(for f in /proc/$BASHPID/fd/*; do # only 0, 1 and 2 left: a limit of 3 + spare leaves spare
		n=${f##*/}
		[ "$n" -gt 2 ] && eval "exec $n>&-" 2>/dev/null
	 done
	 ulimit -n $((3 + spare)) && GPUCTL_SNAPSHOT=0 exec "$GPUCTL" status --json) 2>"$TMP/u$spare.err" |
		jq -c '[.gpus[].processes[] | [.user, .command]]' >"$TMP/u$spare"
	check_eq "a limit that leaves $spare descriptors: the same owners and commands, nothing on stderr" \
		"$(cat "$TMP/u1")" "$(cat "$TMP/u$spare" "$TMP/u$spare.err")"
done
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
