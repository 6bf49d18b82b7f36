#!/usr/bin/env bash
# t2024-mig-recover.sh: a MIG lease is recorded by its instance's UUID, and a restarted daemon
# finds the instance by it (review 1, item 6). While no daemon runs, the administrator destroys
# MIG instances (the test rewrites the simulated H200's machine file): the positions of the
# others shift, and a lease recovered by position would name another instance than its job
# runs on (CUDA_VISIBLE_DEVICES=MIG-<uuid>), so a second holder got the job's instance. A lease
# whose instance is gone ends at the restart, said in the log; the others live on.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 13
M0=MIG-5d7a0c3e-1f2b-5e6d-9a8b-7c6d5e4f3a2b
M1=MIG-8e9f0a1b-2c3d-5e4f-a6b7-c8d9e0f1a2b3
M2=MIG-0a1b2c3d-4e5f-5a6b-8c7d-9e0f1a2b3c4d
# machine SLOT...: the H200 with only the MIG instances of these slots (no process).
machine() {
	awk -v keep=" $* " '
		/^\[/ { sec = $0; inmig = sec == "[mig]"; buf = ""; }
		/^\[process\]/ { skip = 1 }
		!inmig && !skip && sec != "[mig]" { print; next }
		inmig { buf = buf $0 "\n"; if ($1 == "slot" && index(keep, " " $3 " ")) show = 1;
			else if ($1 == "slot") show = 0; }
		inmig && /^memory_used_mib/ { if (show) printf "%s\n", buf; buf = "" }
	' "$MACHINES/h200-mig.machine" >"$TMP/m.new"
	mv "$TMP/m.new" "$TMP/m.machine"
}
machine 0 1 2
use_machine "$TMP/m.machine"
daemon_setup
printf '[daemon]\noffer_timeout = 20s\n' >"$TMP/daemon.conf"
daemon_start
LOG=$TMP/log
: >"$LOG"
declare -A PID
job() {
	local tag=$1
	shift
	mkfifo "$TMP/fifo-$tag"
	"$GPUCTL" run -q "$@" -- sh -c 'echo "$0 $CUDA_VISIBLE_DEVICES" >>"$1"; read x <"$2"' \
		"$tag" "$LOG" "$TMP/fifo-$tag" 2>>"$TMP/errors" &
	PID[$tag]=$!
}
job a -g 0:1
job b -g 0:2
await_count '^[ab] ' "$LOG" 2
cat "$DRUN"/state/lease-???????????????? >"$TMP/records"
check_grep "the lease record keeps the instance's UUID" "^mig_uuid $M1" "$TMP/records"
daemon_stop
machine 1 2 # the admin destroys instance 0: instances 1 and 2 are the first two now
daemon_start
"$GPUCTL" leases --json >"$TMP/out"
check_eq "after instances were destroyed, the restarted daemon names each lease's own instance" \
	"[\"$M2\",\"$M1\"]" "$(jqv '[.leases[].mig_uuid] | sort')"
check_exit "the instance a's job runs on is not granted to another" 10 \
	"$GPUCTL" run -q -g "$M1" -- true
check_exit "nor b's" 10 "$GPUCTL" run -q -g 0:2 -- true
"$GPUCTL" status --json >"$TMP/out"
check_eq "status: each instance's holder" '["root","root"]' \
	"$(jqv '[.gpus[0].mig_devices[].lease.user]')"
daemon_stop
machine 1 # and instance 2, b's, while b's job still runs
daemon_start
await_line "lease [0-9a-f]+ of uid [0-9]+ ended: its MIG instance $M2 is gone" "$DLOG"
check_grep "a lease whose instance is gone ends at the restart, said in the log" \
	"ended: its MIG instance $M2 is gone" "$DLOG"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "the other lease lives on, on its instance" "[\"$M1\"]" "$(jqv '[.leases[].mig_uuid]')"
check_eq "the ended lease's record and lock file are gone: one of each left, a's" "1 1" \
	"$(ls "$DRUN"/state/ | grep -c '^lease-.\{16\}$') $(ls "$DRUN"/state/ | grep -c 'lock\.share-')"
echo >"$TMP/fifo-a"
echo >"$TMP/fifo-b"
wait "${PID[a]}" "${PID[b]}"
wait_leases 0
check_exit "the GPU's remaining instance is free again" 0 "$GPUCTL" run -q -g "$M1" -- true
daemon_stop
# review 4b: an older daemon's record names its instance by position only. The restarted daemon
# finds it by that position, and must write the record again with the UUID: left as it was, a
# later restart after instances were destroyed read it by position again, onto another
# instance (a's job's instance then granted to a second holder).
machine 0 1 2
daemon_start
: >"$LOG"
job c -g 0:1
await_count '^c ' "$LOG" 1
daemon_stop
REC=$(grep -l "^mig_uuid $M1" "$DRUN"/state/lease-????????????????)
grep -v '^mig_uuid ' "$REC" >"$TMP/rec.old"
cat "$TMP/rec.old" >"$REC" # (an older daemon's record: the same file, no UUID)
daemon_start
check_grep "a record read by position is written again with its instance's UUID" \
	"^mig_uuid $M1" "$REC"
daemon_stop
machine 1 2 # instance 0 destroyed: c's instance is now the first
daemon_start
"$GPUCTL" leases --json >"$TMP/out"
check_eq "after that record's instance moved, the lease still names it" "[\"$M1\"]" \
	"$(jqv '[.leases[].mig_uuid]')"
check_exit "and it is not granted to another" 10 "$GPUCTL" run -q -g "$M1" -- true
# Two records naming one instance (an older daemon's position shifted onto a UUID record's
# instance): the UUID's lease keeps it, the other ends, whichever the directory lists first.
daemon_stop
ID=$(sed -n 's/^id //p' "$REC")
grep -v '^mig' "$REC" >"$TMP/rec.uuid" # (c's record as this daemon writes it, whatever it read)
printf 'mig 1\nmig_uuid %s\n' "$M1" >>"$TMP/rec.uuid"
cat "$TMP/rec.uuid" >"$REC"
NEW=0123456789abcdef
sed -e "s/^id .*/id $NEW/" -e '/^mig_uuid /d' -e 's/^mig .*/mig 1/' "$REC" \
	>"$DRUN/state/lease-$NEW"
mkfifo -m 0600 "$DRUN/state/lease-$NEW.fifo"
chown --reference="$REC" "$DRUN/state/lease-$NEW" "$DRUN/state/lease-$NEW.fifo" # (the daemon's)
sleep 600 7<>"$DRUN/state/lease-$NEW.fifo" & # (a writer before the daemon looks)
HOLD=$!
daemon_start
"$GPUCTL" leases --json >"$TMP/out"
check_eq "two records of one instance: only the UUID's lease is recovered" "[\"$ID\"]" \
	"$(jqv '[.leases[].id]')"
kill "$HOLD"
wait "$HOLD" 2>/dev/null
echo >"$TMP/fifo-c"
wait "${PID[c]}"
wait_leases 0
daemon_stop
