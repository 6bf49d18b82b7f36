#!/usr/bin/env bash
# t4001-slurm.sh: gpuctl inside and beside real Slurm jobs (slurmctld + slurmd + munge started
# here, tests/lib/slurm.sh; four simulated GPUs as character devices of major 195). Job B holds GPUs
# 0,1 and runs a workload that touches every GPU; job A gets GPUs 2,3. Inside A, run/env lease
# only among A's GPUs and which/map explain SLURM_JOB_GPUS; beside them, status, the exporter and
# doctor name each process's job from its cgroup (proctrack/cgroup, cgroup v1), and doctor flags
# B's use of GPUs outside its allocation.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/slurm.sh"
plan 15
N=15
if ! slurm_usable; then
	skip "real Slurm" "$SLURM_WHY" $N
	exit 0
fi
quiet_machine "$TMP/four.machine" 4
use_machine "$TMP/four.machine"
use_state
if ! slurm_up 4; then
	skip "real Slurm" "it did not start here: ${SLURM_WHY:-see its log above}" $N
	exit 0
fi
mkfifo "$TMP/fifo-a" "$TMP/fifo-b"
# B: GPUs 0,1 from Slurm, but its workload ignores CUDA_VISIBLE_DEVICES and uses every GPU.
JB=$(sbatch --parsable -o "$TMP/b.out" --gres=gpu:2 \
	--wrap "exec $B/workload --mode ignore --tag b --mem 100 --until $TMP/fifo-b")
await_count '^ready ' "$WORKLOAD_READY" 1 30
PB=$(sed -n 's/^ready //p' "$WORKLOAD_READY" | head -1)
cat >"$TMP/job-a.sh" <<EOF
#!/bin/bash
echo "vars CVD=\$CUDA_VISIBLE_DEVICES JOB_GPUS=\$SLURM_JOB_GPUS"
env -u CUDA_VISIBLE_DEVICES $GPUCTL run -q -n 2 --ignore-usage -- printenv CUDA_VISIBLE_DEVICES >"$TMP/a-run2" 2>"$TMP/a-run2.err"
env -u CUDA_VISIBLE_DEVICES $GPUCTL run -q -n 3 --ignore-usage -- true >"$TMP/a-run3" 2>&1
echo "run3 rc=\$?"
$GPUCTL which 0 >"$TMP/a-which" 2>&1
CUDA_VISIBLE_DEVICES=0 $GPUCTL map --json >"$TMP/a-map.json" 2>&1
exec $B/workload --mode first --tag a --mem 200 --until "$TMP/fifo-a"
EOF
JA=$(sbatch --parsable -o "$TMP/a.out" --gres=gpu:2 "$TMP/job-a.sh")
await_count '^ready ' "$WORKLOAD_READY" 2 30
PA=$(sed -n 's/^ready //p' "$WORKLOAD_READY" | sed -n 2p)

check_grep "job A: Slurm gave it GPUs 2,3" '^vars CVD=2,3 JOB_GPUS=2,3$' "$TMP/a.out"
check_eq "run -n 2 in job A, CUDA_VISIBLE_DEVICES unset: A's GPUs" "2,3" "$(cat "$TMP/a-run2")"
check_grep "run -n 3 in job A: usage error" '^run3 rc=2$' "$TMP/a.out"
check_grep "... naming SLURM_JOB_GPUS" "only 2 can be chosen here: SLURM_JOB_GPUS=2,3 of Slurm job $JA" "$TMP/a-run3"
check_grep "which in job A: one of the job's GPUs" "it is one of the GPUs of Slurm job $JA: nvidia-smi GPUs 2,3 \(SLURM_JOB_GPUS=2,3\)" "$TMP/a-which"
cp "$TMP/a-map.json" "$TMP/out"
check_eq "map in job A with CUDA_VISIBLE_DEVICES=0: device 0 outside the job" \
	"{\"job_id\":\"$JA\",\"variable\":\"SLURM_JOB_GPUS\",\"nvml_indices\":[2,3],\"outside_cuda_indices\":[0]}" \
	"$(jqv '.slurm | {job_id, variable, nvml_indices, outside_cuda_indices}')"

if [ "$SLURM_CGROUP" = 1 ]; then
	"$GPUCTL" status --json >"$TMP/out" 2>"$TMP/err"
	check_eq "status --json: A's process is in job A" "$JA" \
		"$(jqv "[.gpus[].processes[] | select(.pid == $PA) | .slurm_job_id] | unique | .[]")"
	check_eq "status --json: B's process, on all four GPUs, is in job B" "[$JB]" \
		"$(jqv "[.gpus[].processes[] | select(.pid == $PB) | .slurm_job_id] | unique")"
	check_eq "status --json: other processes have slurm_job_id null" "[]" \
		"$(jqv "[.gpus[].processes[] | select(.pid != $PA and .pid != $PB) | .slurm_job_id | select(. != null)]")"
	"$GPUCTL" status --color=never >"$TMP/table" 2>&1
	check_grep "status: the job beside the user" "^ +root +job $JA +$PA " "$TMP/table"
	start_exporter
	curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
	stop_exporter
	check_grep "exporter: GPU 2's series carry both jobs (hpc_job)" \
		"^gpuctl_gpu_memory_used_bytes\{gpu=\"2\",.*,hpc_job=\"$JB,$JA\"\} " "$TMP/metrics"
	check_grep "exporter: A's process series carry its job" \
		"^gpuctl_process_gpu_memory_bytes\{gpu=\"2\",.*,pid=\"$PA\",.*,hpc_job=\"$JA\"\} " "$TMP/metrics"
	"$GPUCTL" doctor --json >"$TMP/out" 2>"$TMP/err"
	check_eq "doctor: B uses GPUs 2,3 outside its allocation" "[{\"pids\":[$PB],\"gpus\":[2,3]}]" \
		"$(jqv "[.findings[] | select(.code == \"slurm_outside\") | {pids, gpus}]")"
	check_eq "doctor: nothing about A" "[]" \
		"$(jqv "[.findings[] | select(.code | startswith(\"slurm\")) | select(.pids | index($PA))]")"
else
	skip "attribution of the live jobs" "no cgroup v1 freezer hierarchy here (proctrack/linuxproc)" 8
fi
echo >"$TMP/fifo-a"
echo >"$TMP/fifo-b"
slurm_await_state "$JA" gone && slurm_await_state "$JB" gone
check "both jobs ended when their workloads did" true
slurm_down
