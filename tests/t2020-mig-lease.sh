#!/usr/bin/env bash
# t2020-mig-lease.sh: MIG instances as lease units (issue 23) on the simulated H200 with MIG on
# (three instances: 0 a 3g.71gb with a process of someone else's on it, 1 and 2 1c.3g.71gb):
# two users lease two instances of the one GPU at once (-g 0:1, -g MIG-<uuid>) and their jobs see
# exactly their instance; a profile request (--mig); an instance in use is skipped unless
# --ignore-usage; a whole-GPU lease waits for the instances and they for it; leases names the
# instance.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 19
if ! can_switch; then
	skip "MIG leases across users" "needs root and setpriv to act as two users" 19
	exit 0
fi
use_machine "$MACHINES/h200-mig.machine"
daemon_setup
printf '[daemon]\noffer_timeout = 20s\n' >"$TMP/daemon.conf"
daemon_start
M0=MIG-5d7a0c3e-1f2b-5e6d-9a8b-7c6d5e4f3a2b
M1=MIG-8e9f0a1b-2c3d-5e4f-a6b7-c8d9e0f1a2b3
M2=MIG-0a1b2c3d-4e5f-5a6b-8c7d-9e0f1a2b3c4d
: >"$TMP/errors"; chmod 666 "$TMP/errors"
LOG=$TMP/log
: >"$LOG"; chmod 666 "$LOG"
declare -A PID DONE
# job WHO TAG [options]: a job of root or nobody (b) that logs "TAG CUDA_VISIBLE_DEVICES" and runs
# until `release TAG`.
job() {
	local who=$1 tag=$2 run=()
	shift 2
	[ "$who" = b ] && run=(as_nobody)
	mkfifo -m 666 "$TMP/fifo-$tag"
	"${run[@]}" "$GPUCTL" run -q "$@" -- sh -c 'echo "$0 $CUDA_VISIBLE_DEVICES" >>"$1"; read x <"$2"' \
		"$tag" "$LOG" "$TMP/fifo-$tag" 2>>"$TMP/errors" &
	PID[$tag]=$!
}
release() { [ -n "${DONE[$1]:-}" ] || echo >"$TMP/fifo-$1"; DONE[$1]=1; }
seen() { awk -v t="$1" '$1 == t {print $2}' "$LOG"; }

job a m1 -g 0:1
job b m2 -g "$M2"
await_count '^m[12] ' "$LOG" 2
check_eq "two users hold two instances of the one GPU at once, each its own" "$M1 $M2" \
	"$(seen m1) $(seen m2)"
"$GPUCTL" leases --json >"$TMP/out"
check_eq "leases --json names each lease's instance" "[\"$M2\",\"$M1\"]" \
	"$(jqv '[.leases[].mig_uuid] | sort')"
daemon_stop
daemon_start
"$GPUCTL" leases --json >"$TMP/out"
check_eq "a restarted daemon knows each lease's instance again" "[\"$M2\",\"$M1\"]" \
	"$(jqv '[.leases[].mig_uuid] | sort')"
"$GPUCTL" status --json >"$TMP/out"
check_eq "status --json: the holder of each instance" '[null,"root","nobody"]' \
	"$(jqv '[.gpus[0].mig_devices[].lease.user]')"
"$GPUCTL" status >"$TMP/table"
check_grep "status: the instance's line names its holder" "$M2  leased: nobody, pid [0-9]+" "$TMP/table"
start_exporter
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
stop_exporter
check_eq "exporter: each leased instance's holder, and the GPU counted leased" "2 1" \
	"$(grep -c '^gpuctl_mig_device_lease_info{' "$TMP/metrics") $(awk '/^gpuctl_gpu_leased\{/ {print $NF}' "$TMP/metrics")"
check_exit "a whole-GPU request is refused while instances are leased" 10 \
	"$GPUCTL" run -q -n 1 --ignore-usage -- true
check_grep "and says why" 'MIG instances of it are leased' "$TMP/stderr"
check_exit "no free instance of a profile: refused" 10 "$GPUCTL" run -q --mig 1c.3g.71gb -- true
release m2
wait "${PID[m2]}"
wait_leases 1
check_exit "--mig PROFILE takes the free instance of that profile" 0 \
	"$GPUCTL" run -q --mig 1c.3g.71gb -- sh -c 'echo $CUDA_VISIBLE_DEVICES $GPUCTL_LEASE_MIG'
check_eq "which the job sees, by its UUID" "$M2 $M2" "$(cat "$TMP/stdout")"
check_exit "an instance someone else's process runs on is not free" 10 \
	"$GPUCTL" run -q --mig 3g.71gb -- true
check_exit "unless --ignore-usage" 0 "$GPUCTL" run -q --mig 3g.71gb --ignore-usage -- \
	sh -c 'echo $CUDA_VISIBLE_DEVICES'
check_eq "then it gets that one" "$M0" "$(cat "$TMP/stdout")"
check_exit "-g GPU:INSTANCE names an instance that exists" 6 "$GPUCTL" run -q -g 0:9 -- true
release m1
wait "${PID[m1]}"
wait_leases 0
PYTHONPATH=$ROOT/python GPUCTL_BINARY=$GPUCTL PYTHONDONTWRITEBYTECODE=1 python3 -c '
import os, gpuctl
a = gpuctl.lease(gpus="0:2")
b = gpuctl.lease(mig="3g.71gb", ignore_usage=True)
print(a.env["CUDA_VISIBLE_DEVICES"], b.env["CUDA_VISIBLE_DEVICES"], os.environ["GPUCTL_LEASE_MIG"])
b.release(); a.release()
' >"$TMP/py.out" 2>>"$TMP/errors"
check_eq "gpuctl.lease(gpus=\"0:2\") and lease(mig=...): the instances, in os.environ" "$M2 $M0 $M0" \
	"$(cat "$TMP/py.out")"
wait_leases 0
id=$(cd "$TMP" && "$GPUCTL" submit -g 0:2 -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>>"$TMP/errors")
"$GPUCTL" wait "$id" >/dev/null 2>&1
check_eq "submit -g 0:2: the detached job runs on that instance" "$M2" "$("$GPUCTL" logs "$id" 2>&1)"
check_exit "once no instance is leased, the whole GPU can be" 0 \
	"$GPUCTL" run -q -n 1 --ignore-usage -- true
# containers (review 2 follow-up): env --format=docker names the instance, never its parent GPU
# (which would give the container every instance on it, others' too)
"$GPUCTL" env -q -g 0:2 --dry-run --format=docker >"$TMP/out" 2>>"$TMP/errors"
check_grep "env --format=docker for an instance: --gpus \"device=MIG-...\" and CUDA's, by its UUID" \
	"^--gpus \"device=$M2\" -e CUDA_VISIBLE_DEVICES=$M2 " "$TMP/out"
daemon_stop
