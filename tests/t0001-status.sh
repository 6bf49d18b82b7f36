#!/usr/bin/env bash
# t0001-status.sh: `gpuctl status` on the simulated 8-GPU machine: table, JSON, CSV, selection.
. "$(dirname "$0")/lib.sh"

spawn python3 train.py --epochs 10; P1=$SPAWNED
spawn $'odd\x01name \xff caf\xc3\xa9'; P2=$SPAWNED
M=$TMP/m.machine
sed -e "s/^pid = 4000101/pid = $P1/" -e "s/^pid = 4000104/pid = $P2/" "$MACHINES/h100x8.machine" >"$M"
use_machine "$M"

check_exit "status exits 0" 0 "$GPUCTL" status
cp "$TMP/stdout" "$TMP/table"
check_grep "table has a header with the driver" '^driver 550\.54\.15  CUDA 12\.4  8 GPUs' "$TMP/table"
check_grep "table row for GPU 0" '^  0 NVIDIA H100 80GB HBM3 +98% +71234 / 81559 MiB +64C +658 / 700 W$' "$TMP/table"
check_grep "process line with user, pid, memory, utilisation and arguments" "^ +root +$P1 +70000 MiB  sm 95% mem 31% python3 train.py --epochs 10" "$TMP/table"
check_grep "invisible process is shown with what is known" '4000102 +20480 MiB  sm 40% mem 12% \(not in /proc' "$TMP/table"
check_grep "C+G process marked, with its encoder and decoder use" '4000106 +1000 MiB  sm  3% mem  0% enc 25% dec 10% C\+G ' "$TMP/table"
check_grep "a process without a utilisation sample shows -" '4000105 +78000 MiB  sm   - mem   - \(not in /proc' "$TMP/table"
check_eq "table fits 80 columns" "" "$(awk 'length($0) > 80' "$TMP/table")"
check_eq "no colour when not a terminal" "" "$(grep -c $'\033' "$TMP/table" | grep -v '^0$')"
"$GPUCTL" status --color=always >"$TMP/c"
check_grep "--color=always colours" $'\033\\[' "$TMP/c"
NO_COLOR=1 "$GPUCTL" status --color=always >"$TMP/c"
check_grep "--color=always beats NO_COLOR" $'\033\\[' "$TMP/c"
check_exit "--color=sometimes is a usage error" 2 "$GPUCTL" status --color=sometimes

"$GPUCTL" status --json >"$TMP/out"
check "JSON parses" jq -e . "$TMP/out"
check_eq "top-level versions" '["550.54.15","12.4"]' "$(jqv '[.driver_version,.cuda_driver_version]')"
check_eq "gpus in index order" '[0,1,2,3,4,5,6,7]' "$(jqv '[.gpus[].index]')"
check_eq "gpu 0 fields" '{"index":0,"uuid":"GPU-6513270e-269e-0d37-f2a7-4de452e6b438","name":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:18:00.0","memory_total_mib":81559,"memory_used_mib":71234,"memory_free_mib":9813,"utilization_gpu_pct":98,"utilization_memory_pct":32,"temperature_c":64,"power_w":658,"power_limit_w":700,"compute_mode":"Default","mig_mode":"Disabled"}' \
	"$(jqv '.gpus[0] | {index,uuid,name,pci_bus_id,memory_total_mib,memory_used_mib,memory_free_mib,utilization_gpu_pct,utilization_memory_pct,temperature_c,power_w,power_limit_w,compute_mode,mig_mode}')"
check_eq "power is float watts" '70.317' "$(jqv '.gpus[1].power_w')"
check_eq "visible process" "{\"pid\":$P1,\"user\":\"root\",\"command\":\"python3 train.py --epochs 10\",\"used_memory_mib\":70000,\"type\":\"compute\"}" \
	"$(jqv '.gpus[0].processes[0] | {pid,user,command,used_memory_mib,type}')"
check_eq "invisible process: user and command null" '{"pid":4000102,"user":null,"command":null,"used_memory_mib":20480}' \
	"$(jqv '.gpus[2].processes[0] | {pid,user,command,used_memory_mib}')"
check_grep "odd bytes in a command line stay valid JSON" '"command": "odd\\u0001name \\ufffd café"' "$TMP/out"
check_eq "graphics+compute is one entry" '[{"pid":4000106,"type":"compute+graphics"}]' "$(jqv '[.gpus[6].processes[] | {pid,type}]')"
check_eq "unsupported fan is not in the contract, no mig_devices without MIG" 'null' "$(jqv '.gpus[0].mig_devices')"

"$GPUCTL" status --json --no-processes >"$TMP/out"
check_eq "--no-processes leaves the lists out" 'false' "$(jqv '.gpus[0] | has("processes")')"

"$GPUCTL" status --json -i "3,GPU-8d116ece,00000000:BA:00.0" >"$TMP/out"
check_eq "-i by index, UUID prefix and bus id" '[3,5,6]' "$(jqv '[.gpus[].index]')"
check_exit "-i unknown index" 6 "$GPUCTL" status -i 9
check_grep "names what is missing" 'no GPU with index 9: this machine has 8 GPUs' "$TMP/stderr"
check_exit "-i unknown UUID" 6 "$GPUCTL" status -i GPU-ffff
check_exit "-i junk is a usage error" 2 "$GPUCTL" status -i first

"$GPUCTL" status --query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,memory.free,utilization.gpu,utilization.memory,temperature.gpu,power.draw,power.limit,compute_mode,driver_version --format=csv >"$TMP/csv"
check_eq "csv header" 'index, uuid, name, pci.bus_id, memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%], utilization.memory [%], temperature.gpu, power.draw [W], power.limit [W], compute_mode, driver_version' "$(head -1 "$TMP/csv")"
check_eq "csv row" '1, GPU-d23f0824-128b-2f33-0c5c-7fd0a6a3a450, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559 MiB, 0 MiB, 81047 MiB, 0 %, 0 %, 32, 70.32 W, 700.00 W, Default, 550.54.15' "$(sed -n 3p "$TMP/csv")"
check_eq "csv has one row per GPU" 9 "$(wc -l <"$TMP/csv")"
"$GPUCTL" status --query-gpu=index,memory.used,fan.speed --format=csv,noheader,nounits -i 0 >"$TMP/csv"
check_eq "noheader,nounits and [N/A]" '0, 71234, [N/A]' "$(cat "$TMP/csv")"
"$GPUCTL" status --query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id --format=csv >"$TMP/csv"
check_eq "apps header uses the canonical name" 'pid, process_name, used_gpu_memory [MiB], gpu_uuid, gpu_bus_id' "$(head -1 "$TMP/csv")"
check_eq "apps row" "$P1, python3, 70000 MiB, GPU-6513270e-269e-0d37-f2a7-4de452e6b438, 00000000:18:00.0" "$(sed -n 2p "$TMP/csv")"
check_eq "graphics-only processes are not compute apps" 6 "$(($(wc -l <"$TMP/csv") - 1))"
check_exit "unknown field" 2 "$GPUCTL" status --query-gpu=index,temprature.gpu --format=csv
check_grep "unknown field is named" 'Field "temprature.gpu" is not a valid field' "$TMP/stderr"
check_exit "--query-gpu without --format" 2 "$GPUCTL" status --query-gpu=index
check_exit "--format=xml" 2 "$GPUCTL" status --query-gpu=index --format=xml
check_exit "--json with --query-gpu" 2 "$GPUCTL" status --json --query-gpu=index --format=csv
"$GPUCTL" status --help-query-gpu >"$TMP/h"
check_grep "--help-query-gpu lists fields" '^  memory\.used +' "$TMP/h"
check_exit "ls is an alias" 0 "$GPUCTL" ls --no-processes
check_exit "unknown option" 2 "$GPUCTL" status --bogus
check_grep "usage error points to --help" 'gpuctl status --help' "$TMP/stderr"
check_exit "stray argument" 2 "$GPUCTL" status extra
