#!/usr/bin/env bash
# t0004-mig.sh: MIG devices and the GPU/compute instance ids of their processes in the table, and
# where NVML refuses or fails (every value of the MIG machine: t0006's golden files).
. "$(dirname "$0")/lib/lib.sh"
plan 6
use_machine "$MACHINES/a100-mig.machine"
"$GPUCTL" status >"$TMP/t"
check_grep "table lists MIG instances" '^      mig 1/0  3g.20gb +9000 / 19968 MiB  MIG-' "$TMP/t"
check_grep "table marks a MIG process (no utilisation samples under MIG)" '4000302 +3900 MiB  sm   - mem   - mig 2/0 ' "$TMP/t"
"$GPUCTL" status --query-gpu=index,utilization.gpu,mig.mode.current --format=csv,noheader >"$TMP/csv"
check_eq "csv: [N/A] utilisation under MIG" $'0, [N/A], Enabled\n1, 20 %, Disabled' "$(cat "$TMP/csv")"
"$GPUCTL" status --query-compute-apps=pid,gpu_uuid --format=csv,noheader >"$TMP/csv"
"$GPUCTL" status --json >"$TMP/out"
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
