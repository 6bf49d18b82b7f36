#!/usr/bin/env bash
# t2013-recover.sh: what a restarted daemon learns from the kernel and NVML when its records do
# not tell it all (issue 21, items 4 and 9). A second user (nobody) who keeps a lease's lock
# descriptor but closes its FIFO holds nothing, before and after a restart (item 4); a GPU whose
# job still runs when the state directory was wiped, or whose lock is held with its record
# removed, is not free: it is accounted to its holder's uid (kind "found", counted against
# max_gpus_per_user, shown in `leases`) until its job ends (item 9). Another user (root here) is
# the one who must not get those GPUs.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 26
H=$MACHINES/h100x8.machine
use_machine "$H"
daemon_setup
if ! can_switch; then
	skip "recovery" "needs root and setpriv to act as a second user" 26
	exit 0
fi
printf '[daemon]\nmax_gpus_per_user = 2\n' >"$TMP/daemon.conf"
WL=$B/workload
U=($(awk '/^uuid = GPU/{print $3}' "$H"))
found_of() { "$GPUCTL" leases --json | jq -r --arg u "$1" \
	'[.leases[] | select(.kind == "found" and .gpus[0].uuid == $u) | "\(.user) \(.pid)"] | join(",")'; }
# A process that never asked gpuctl runs on GPU 2 before the daemon's first start: nobody's lease
# (only a daemon whose state was lost takes the processes on a GPU for leases' jobs).
mkfifo "$TMP/go-stray"
as_nobody env CUDA_VISIBLE_DEVICES="${U[2]}" "$WL" --tag stray --until "$TMP/go-stray" &
stray=$!
await_line '^ready [0-9]+$' "$WORKLOAD_READY"
daemon_start
ST=$DRUN/state
check_eq "first start: a process already on GPU 2 is no found lease" "" "$(found_of "${U[2]}")"
check_exit "... and GPU 2 goes to --ignore-usage as before" 0 "$GPUCTL" run -q -g 2 --ignore-usage -- true
echo go >"$TMP/go-stray"
wait $stray
: >"$WORKLOAD_READY"
mkfifo -m 666 "$TMP/go4" "$TMP/go5" "$TMP/go6" "$TMP/go7" "$TMP/go8"
: >"$TMP/kept"; chmod 666 "$TMP/kept"
restart() { daemon_stop; daemon_start; }

# Item 4. nobody's job closes its FIFO and keeps the lock descriptor (the attack), then waits.
as_nobody "$GPUCTL" run -q -g 4 --ignore-usage -- python3 -c '
import os, sys
# What each descriptor is, read before any is closed: once the FIFO closes the daemon may retire
# the lock file at once, and its link then reads "... (deleted)".
targets = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        targets[int(fd)] = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        pass
kept = sum(t.endswith(".lock") for t in targets.values())
for fd, t in targets.items():
    if t.endswith(".fifo"):
        os.close(fd)
open(sys.argv[1], "a").write("kept %d\n" % kept)
open(sys.argv[2]).read()' "$TMP/kept" "$TMP/go4" &
a4=$!
await_line '^kept 1$' "$TMP/kept"
wait_ended 1
check "the lease ended with its FIFO, and its lock file was retired at once" test ! -e "$ST/${U[4]}.lock"
# Restarted before anyone else leased GPU 4 (a new lease's fresh lock file would hide the old one).
restart
"$GPUCTL" leases --json >"$TMP/out"
check_eq "after a restart no GPU is held by a process nobody can name" 0 "$(jqv '.held_unknown | length')"
check_exit "the kept lock does not keep GPU 4 from another user" 0 "$GPUCTL" run -q -g 4 --ignore-usage -- true
check_exit "nor from its own user" 0 as_nobody "$GPUCTL" run -q -g 4 --ignore-usage -- true
check_exit "and nobody may still lease up to the cap: the kept lock is no lease" 0 \
	as_nobody "$GPUCTL" run -q -n 2 --ignore-usage -- true

# The same with the daemon away when the FIFO closes: a record with no writer left is a lease that
# ended; its lock file is retired when the next daemon finds it so.
ended=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
: >"$TMP/kept"
as_nobody "$GPUCTL" run -q -g 5 --ignore-usage -- python3 -c '
import os, sys
open(sys.argv[1], "a").write("ready\n")
open(sys.argv[2]).readline()
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + fd).endswith(".fifo"):
            os.close(int(fd))
    except OSError:
        pass
open(sys.argv[1], "a").write("closed\n")
open(sys.argv[3]).read()' "$TMP/kept" "$TMP/go5" "$TMP/go8" &
a5=$!
await_line '^ready$' "$TMP/kept"
wait_granted 4
daemon_stop
echo close >"$TMP/go5"
await_line '^closed$' "$TMP/kept"
daemon_start
check "a lease whose FIFO closed while no daemon ran: its lock file is retired" test ! -e "$ST/${U[5]}.lock"
check_exit "and GPU 5 is free for another user" 0 "$GPUCTL" run -q -g 5 --ignore-usage -- true
echo go >"$TMP/go4"
echo go >"$TMP/go8"
wait $a4 $a5

# Item 9, the whole state directory wiped under a running job: what NVML shows still counts.
as_nobody "$GPUCTL" run -q -g 3 --ignore-usage -- "$WL" --tag wiped --until "$TMP/go6" &
await_line '^ready [0-9]+$' "$WORKLOAD_READY"
wl=$(awk '/^ready/ {p = $2} END {print p}' "$WORKLOAD_READY")
daemon_stop
rm -rf "$ST"
daemon_start
check_exit "state wiped: GPU 3, where nobody's job runs, is refused to another user" 10 \
	"$GPUCTL" run -g 3 --ignore-usage -- true
check_grep "the refusal names its holder" 'nobody' "$TMP/stderr"
check_eq "leases shows it as nobody's, found (no record), with the job's pid" "nobody $wl" "$(found_of "${U[3]}")"
check_grep "the daemon logs what it found" "GPU 3 has no record but is in use: accounted to uid 65534 \(pid $wl\)" "$DLOG"
check_exit "it counts against nobody's max_gpus_per_user (2)" 10 \
	as_nobody "$GPUCTL" run -n 2 --ignore-usage -- true
check_exit "while one more GPU is still granted to nobody" 0 as_nobody "$GPUCTL" run -q -n 1 --ignore-usage -- true

# Item 9, the records removed but not the lock files: the lock names its holder.
as_nobody "$GPUCTL" run -q -g 6 --ignore-usage -- sh -c 'echo locked >>"$0"; read x <"$1"' "$TMP/kept" "$TMP/go7" &
j6=$!
await_line '^locked$' "$TMP/kept"
daemon_stop
rm -f "$ST"/lease-????????????????
daemon_start
check_exit "records removed: GPU 6, whose lock nobody's job holds, is refused to another user" 10 \
	"$GPUCTL" run -g 6 --ignore-usage -- true
check_eq "shown as nobody's (what the lock file says)" "nobody" "$("$GPUCTL" leases --json | jq -r --arg u "${U[6]}" '[.leases[] | select(.kind == "found" and .gpus[0].uuid == $u) | .user] | join(",")')"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "and not as a GPU held by a process nobody can name" 0 "$(jqv '.held_unknown | length')"
check_exit "nobody is at the cap now (GPUs 3 and 6)" 10 as_nobody "$GPUCTL" run -n 1 --ignore-usage -- true
"$GPUCTL" leases >"$TMP/table"
check_grep "the table shows the kind and why" 'found .*unrecorded' "$TMP/table"

# Once the jobs end, their GPUs are free again (the daemon looks every few seconds).
ended=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
echo go >"$TMP/go6"
echo go >"$TMP/go7"
wait $j6
wait_ended $((ended + 2))
check_eq "both found leases ended with their jobs" "" "$(found_of "${U[3]}")$(found_of "${U[6]}")"
check_exit "GPU 3 is free for another user" 0 "$GPUCTL" run -q -g 3 --ignore-usage -- true
check_exit "and GPU 6" 0 "$GPUCTL" run -q -g 6 --ignore-usage -- true

# A record whose FIFO is gone (removed, the lock file kept) proves nothing ended: the held lock
# still keeps the GPU, for its holder.
mkfifo -m 666 "$TMP/go9"
: >"$TMP/kept"
as_nobody "$GPUCTL" run -q -g 7 --ignore-usage -- sh -c 'echo locked >>"$0"; read x <"$1"' "$TMP/kept" "$TMP/go9" &
j7=$!
await_line '^locked$' "$TMP/kept"
daemon_stop
rm -f "$ST"/lease-*.fifo
daemon_start
check_exit "FIFOs removed: GPU 7, whose lock nobody's job holds, is refused to another user" 10 \
	"$GPUCTL" run -g 7 --ignore-usage -- true
check_eq "and shown as nobody's" "nobody" "$("$GPUCTL" leases --json | jq -r --arg u "${U[7]}" '[.leases[] | select(.kind == "found" and .gpus[0].uuid == $u) | .user] | join(",")')"
ended=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
echo go >"$TMP/go9"
wait $j7
wait_ended $((ended + 1))
check_exit "until its job ends" 0 "$GPUCTL" run -q -g 7 --ignore-usage -- true
