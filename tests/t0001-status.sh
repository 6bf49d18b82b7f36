#!/usr/bin/env bash
# t0001-status.sh: `gpuctl status` on the simulated 8-GPU machine: table, JSON, CSV, selection,
# with live processes (every value of each machine in each format: t0014's golden files).
. "$(dirname "$0")/lib.sh"
plan 35

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
check_eq "visible process" "{\"pid\":$P1,\"user\":\"root\",\"command\":\"python3 train.py --epochs 10\",\"used_memory_mib\":70000,\"type\":\"compute\"}" \
	"$(jqv '.gpus[0].processes[0] | {pid,user,command,used_memory_mib,type}')"
check_eq "invisible process: user and command null" '{"pid":4000102,"user":null,"command":null,"used_memory_mib":20480}' \
	"$(jqv '.gpus[2].processes[0] | {pid,user,command,used_memory_mib}')"
check_grep "odd bytes in a command line stay valid JSON" '"command": "odd\\u0001name \\ufffd café"' "$TMP/out"
check_eq "graphics+compute is one entry" '[{"pid":4000106,"type":"compute+graphics"}]' "$(jqv '[.gpus[6].processes[] | {pid,type}]')"

"$GPUCTL" status --json --no-processes >"$TMP/out"
check_eq "--no-processes leaves the lists out" 'false' "$(jqv '.gpus[0] | has("processes")')"

"$GPUCTL" status --json -i "3,GPU-8d116ece,00000000:BA:00.0" >"$TMP/out"
check_eq "-i by index, UUID prefix and bus id" '[3,5,6]' "$(jqv '[.gpus[].index]')"
check_exit "-i unknown index" 6 "$GPUCTL" status -i 9
check_grep "names what is missing" 'no GPU with index 9: this machine has 8 GPUs' "$TMP/stderr"
check_exit "-i unknown UUID" 6 "$GPUCTL" status -i GPU-ffff
check_exit "-i junk is a usage error" 2 "$GPUCTL" status -i first

"$GPUCTL" status --query-gpu=index,memory.used,fan.speed --format=csv,noheader,nounits -i 0 >"$TMP/csv"
check_eq "noheader,nounits and [N/A]" '0, 71234, [N/A]' "$(cat "$TMP/csv")"
"$GPUCTL" status --query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id --format=csv >"$TMP/csv"
check_eq "apps row" "$P1, python3, 70000 MiB, GPU-6513270e-269e-0d37-f2a7-4de452e6b438, 00000000:18:00.0" "$(sed -n 2p "$TMP/csv")"
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
