#!/usr/bin/env bash
# t0002-fallbacks.sh: older drivers: each symbol fallback is read with its own struct layout.
. "$(dirname "$0")/lib/lib.sh"
plan 28
H=$MACHINES/h100x8.machine
export FAKENVML_STATS=$TMP/stats

use_machine "$H" "$FAKE"
"$GPUCTL" status --json >"$TMP/out"
check_eq "current driver: _v3 process lists used" 1 "$(grep -c '^nvmlDeviceGetComputeRunningProcesses_v3 ' "$TMP/stats")"
check_eq "current driver: memory _v2 used, reserved reported" '[71234,512,9813]' "$(jqv '.gpus[0] | [.memory_used_mib,.memory_reserved_mib,.memory_free_mib]')"
check_grep "current driver: nvmlInit_v2" '^nvmlInit_v2 1$' "$TMP/stats"
# issue 22: a command about to exit leaves the library be (the exit releases all it holds); the
# stand-in writes its counts at the exit then
check_eq "a one-shot makes no nvmlShutdown before its exit" 0 "$(grep -c '^nvmlShutdown ' "$TMP/stats")"

rm -f "$TMP/stats"
use_machine "$H" "$FAKE_OLD"
check_exit "old driver (no _v2/_v3 symbols) works" 0 "$GPUCTL" status --json
cp "$TMP/stdout" "$TMP/out"
check_grep "old driver: plain nvmlInit" '^nvmlInit 1$' "$TMP/stats"
check_grep "old driver: plain process list" '^nvmlDeviceGetComputeRunningProcesses [0-9]+$' "$TMP/stats"
check_eq "old driver: 16-byte entries read right" '[[4000101,70000]]' "$(jqv '[.gpus[0].processes[] | [.pid,.used_memory_mib]]')"
check_eq "old driver: v1 memory (used includes reserved, reserved unknown)" '[71746,null,9813]' "$(jqv '.gpus[0] | [.memory_used_mib,.memory_reserved_mib,.memory_free_mib]')"
check_eq "old driver: legacy bus id shown in the 8-digit form" '"00000000:18:00.0"' "$(jqv '.gpus[0].pci_bus_id')"
check_eq "old driver: CUDA version from the plain call" '"12.4"' "$(jqv '.cuda_driver_version')"
"$GPUCTL" status --query-compute-apps=pid,used_memory --format=csv,noheader -i 2 >"$TMP/csv"
check_eq "old driver: csv apps" $'4000102, 20480 MiB\n4000103, 20480 MiB' "$(cat "$TMP/csv")"

use_machine "$H" "$FAKE_R535"
"$GPUCTL" status --json >"$TMP/out"
check_eq "535.43-535.86: 32-byte _v3 entries read right" '[[4000102,20480],[4000103,20480]]' "$(jqv '[.gpus[2].processes[] | [.pid,.used_memory_mib]]')"
check_eq "535: every GPU's list right" '[1,0,2,1,0,1,1,0]' "$(jqv '[.gpus[] | (.processes | length)]')"

# A driver that rejects the memory _v2 version word: fall back to the plain call.
M=$TMP/m.machine
{ echo "fail.nvmlDeviceGetMemoryInfo_v2 = FUNCTION_NOT_FOUND"; cat "$H"; } >"$M"
use_machine "$M"
"$GPUCTL" status --json >"$TMP/out"
check_eq "memory _v2 FUNCTION_NOT_FOUND: plain call used" '[71746,null]' "$(jqv '.gpus[0] | [.memory_used_mib,.memory_reserved_mib]')"

# Processes that start between the two calls of the protocol. The stand-in adds them at a GPU's
# first call that passes a buffer; one buffer serves every GPU, so GPU 0's size query is the only
# one: its list grows past the buffer fetched for it, and GPUs 1 and 2 get theirs at once.
{ echo "race_grow = 50"; cat "$H"; } >"$M"
"$GPUCTL" status --json >"$TMP/out"
check_eq "list that grows between the calls is fetched whole" '[51,50,52]' "$(jqv '[.gpus[0,1,2].processes | length]')"
check_eq "no entry lost or garbled" 'true' "$(jqv '[.gpus[0].processes[].pid] == [4000101] + [range(3900000;3900050)]')"

# Unavailable values are null / N/A / [N/A], never 0.
{ echo "fail.nvmlDeviceGetTemperature = NOT_SUPPORTED"
  echo "fail.nvmlDeviceGetTemperatureV = NOT_SUPPORTED"
  echo "fail.nvmlDeviceGetPowerUsage = NO_PERMISSION"
  echo "fail.nvmlDeviceGetComputeMode = UNKNOWN"
  echo "fail.nvmlSystemGetDriverVersion = NOT_SUPPORTED"
  grep -v '^cuda_driver_version' "$H"; } >"$M"
"$GPUCTL" status --json >"$TMP/out"
check_eq "unavailable fields are null" '[null,null,null,null,null]' "$(jqv '[.driver_version,.cuda_driver_version,.gpus[0].temperature_c,.gpus[0].power_w,.gpus[0].compute_mode]')"
check_eq "available ones are still there" '[98,700]' "$(jqv '.gpus[0] | [.utilization_gpu_pct,.power_limit_w]')"
"$GPUCTL" status --query-gpu=temperature.gpu,power.draw,driver_version --format=csv,noheader -i 0 >"$TMP/csv"
check_eq "csv shows [N/A], or the driver's words as nvidia-smi does" '[N/A], [Insufficient Permissions], [N/A]' "$(cat "$TMP/csv")"
"$GPUCTL" status -i 0 >"$TMP/t"
check_grep "table shows N/A" '^  0 NVIDIA H100 80GB HBM3 +98% +71234 / 81559 MiB +N/A +N/A$' "$TMP/t"
check_grep "table header shows N/A driver" '^driver N/A  CUDA N/A' "$TMP/t"

use_machine "$MACHINES/workstation-mixed.machine"
"$GPUCTL" status --json >"$TMP/out"
check_eq "process memory unavailable is null" '[4000202,null]' "$(jqv '.gpus[2].processes[0] | [.pid,.used_memory_mib]')"
check_eq "graphics-only process" '"graphics"' "$(jqv '.gpus[0].processes[0].type')"
"$GPUCTL" status --query-compute-apps=pid,used_memory --format=csv,noheader >"$TMP/csv"
check_eq "csv apps: [N/A] memory" '4000202, [N/A]' "$(cat "$TMP/csv")"

# Issue 22: the functions are resolved by group, each the first time a command reads it: a field
# whose group the base refresh does not resolve is still read (old driver: the plain names).
use_machine "$H" "$FAKE_OLD"
check_eq "old driver: fields resolved on demand (serial, SM clock, pstate)" '0, 1651220004000, 1980 MHz, P0' \
	"$("$GPUCTL" status --query-gpu=index,serial,clocks.sm,pstate --format=csv,noheader -i 0)"
# GPUCTL_NVML_REPORT lists every slot, the groups a command did not need included.
use_machine "$H" "$FAKE"
GPUCTL_NVML_REPORT=$TMP/report "$GPUCTL" status --query-gpu=index --format=csv >/dev/null
check_grep "report: a field's slot resolved though --query-gpu=index reads none" '^resolve nvmlDeviceGetSerial:' "$TMP/report"
check_grep "report: the process lists' slot, with its fallbacks" '^resolve nvmlDeviceGetComputeRunningProcesses_v3: nvmlDeviceGetComputeRunningProcesses_v3 nvmlDeviceGetComputeRunningProcesses_v2 nvmlDeviceGetComputeRunningProcesses$' "$TMP/report"
