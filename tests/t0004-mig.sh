#!/usr/bin/env bash
# t0004-mig.sh: MIG devices and the GPU/compute instance ids of their processes.
. "$(dirname "$0")/lib.sh"
use_machine "$MACHINES/a100-mig.machine"
"$GPUCTL" status --json >"$TMP/out"
check_eq "mig mode per GPU" '["Enabled","Disabled"]' "$(jqv '[.gpus[].mig_mode]')"
check_eq "utilisation unavailable under MIG" '[null,20]' "$(jqv '[.gpus[].utilization_gpu_pct]')"
check_eq "MIG devices listed with their ids and memory" '[[0,1,0,19968,9000],[1,2,0,9856,4000],[2,7,0,4864,0]]' \
	"$(jqv '[.gpus[0].mig_devices[] | [.index,.gpu_instance_id,.compute_instance_id,.memory_total_mib,.memory_used_mib]]')"
check_eq "MIG device UUIDs" 'true' "$(jqv '[.gpus[0].mig_devices[].uuid | startswith("MIG-")] | all')"
check_eq "MIG device names" '"NVIDIA A100-SXM4-40GB MIG 3g.20gb"' "$(jqv '.gpus[0].mig_devices[0].name')"
check_eq "processes carry GI/CI" '[[4000301,1,0],[4000302,2,0]]' "$(jqv '[.gpus[0].processes[] | [.pid,.gpu_instance_id,.compute_instance_id]]')"
check_eq "no mig_devices on a GPU without MIG" 'false' "$(jqv '.gpus[1] | has("mig_devices")')"
check_eq "compute mode Exclusive_Process" '"Exclusive_Process"' "$(jqv '.gpus[1].compute_mode')"
"$GPUCTL" status >"$TMP/t"
check_grep "table lists MIG instances" '^      mig 1/0  3g.20gb +9000 / 19968 MiB  MIG-' "$TMP/t"
check_grep "table marks a MIG process (no utilisation samples under MIG)" '4000302 +3900 MiB  sm   - mem   - mig 2/0 ' "$TMP/t"
"$GPUCTL" status --query-gpu=index,utilization.gpu,mig.mode.current --format=csv,noheader >"$TMP/csv"
check_eq "csv: [N/A] utilisation under MIG" $'0, [N/A], Enabled\n1, 20 %, Disabled' "$(cat "$TMP/csv")"
"$GPUCTL" status --query-compute-apps=pid,gpu_uuid --format=csv,noheader >"$TMP/csv"
check_eq "csv apps under MIG name the parent GPU" 2 "$(grep -c "$(jq -r '.gpus[0].uuid' "$TMP/out")" "$TMP/csv")"

# Unprivileged callers get NO_PERMISSION for a MIG parent's aggregate: ask each MIG instance.
M=$TMP/m.machine
{ echo "unprivileged = 1"; cat "$MACHINES/a100-mig.machine"; } >"$M"
use_machine "$M"
"$GPUCTL" status --json >"$TMP/out"
check_eq "unprivileged: processes found through the instances" '[[4000301,1,0],[4000302,2,0]]' "$(jqv '[.gpus[0].processes[] | [.pid,.gpu_instance_id,.compute_instance_id]]')"

# A list that fails is unavailable, not a partial list passed off as complete.
{ echo "fail.nvmlDeviceGetComputeRunningProcesses = UNKNOWN"; cat "$MACHINES/a100-mig.machine"; } >"$M"
"$GPUCTL" status --json >"$TMP/out"
check_eq "failed compute list: processes null" '[null,null]' "$(jqv '[.gpus[].processes]')"
