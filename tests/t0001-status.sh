#!/usr/bin/env bash
# t0001-status.sh: `gpuctl status` on the simulated 8-GPU machine: table, JSON, CSV, selection,
# with live processes (every value of each machine in each format: t0006's golden files).
. "$(dirname "$0")/lib/lib.sh"
plan 49

spawn python3 train.py --epochs 10; P1=$SPAWNED
spawn $'odd\x01name \xff caf\xc3\xa9'; P2=$SPAWNED
LONG="python3 -m torch.distributed.run --nproc_per_node=8 train.py --config configs/llama-70b-finetune.yaml --resume"
spawn $LONG; P3=$SPAWNED
M=$TMP/m.machine
sed -e "s/^pid = 4000101/pid = $P1/" -e "s/^pid = 4000104/pid = $P2/" -e "s/^pid = 4000103/pid = $P3/" \
	"$MACHINES/h100x8.machine" >"$M"
use_machine "$M"
# wider N FILE: the lines of FILE wider than N columns (… is one column, three bytes).
wider() { sed 's/…/./g' "$2" | awk -v n="$1" 'length($0) > n'; }

check_exit "status exits 0" 0 "$GPUCTL" status
cp "$TMP/stdout" "$TMP/table"
check_grep "table has a header with the driver" '^driver 550\.54\.15  CUDA 12\.4  8 GPUs' "$TMP/table"
check_grep "table row for GPU 0" '^  0 NVIDIA H100 80GB HBM3 +98% +71234 / 81559 MiB +64C +658 / 700 W$' "$TMP/table"
check_grep "process line with user, pid, memory, utilisation and arguments" "^ +$(id -un) +$P1 +70000 MiB  sm 95% mem 31% python3 train.py --epochs 10" "$TMP/table"
check_grep "invisible process is shown with what is known" '4000102 +20480 MiB  sm 40% mem 12% \(not in /proc' "$TMP/table"
check_grep "C+G process marked, with its encoder and decoder use" '4000106 +1000 MiB  sm  3% mem  0% enc 25% dec 10% C\+G ' "$TMP/table"
check_grep "a process without a utilisation sample shows -" '4000105 +78000 MiB  sm   - mem   - \(not in /proc' "$TMP/table"
check_grep "piped: command lines whole, as gpuctl-status(1) says" "^ .* $P3 .* $LONG\$" "$TMP/table"
check_grep "piped: nothing cut" '\(not in /proc: exited, or another PID namespace\)$' "$TMP/table"
COLUMNS=80 "$GPUCTL" status >"$TMP/t80"
check_eq "COLUMNS=80: the table fits 80 columns" "" "$(wider 80 "$TMP/t80")"
check_grep "a cut command line ends with …" "^ .* $P3 .* python3 -m torch\.distribute.*…$" "$TMP/t80"
check_grep "on a terminal's width too (COLUMNS=80)" '\(not in /proc: exited, or a…$' "$TMP/t80"
COLUMNS=40 "$GPUCTL" status >"$TMP/t40"
check_grep "a terminal narrower than the line: still cut, 8 columns of the command kept" "^ .* $P3 .* python3…$" "$TMP/t40"
# GPU names: whole when there is room; at 100 columns and more, never cut; short of room, the
# words every board repeats ("NVIDIA ", "GeForce ") go before any meaning is cut.
use_machine "$MACHINES/workstation-mixed.machine"
COLUMNS=80 "$GPUCTL" status >"$TMP/ws"
check_grep "80 columns: NVIDIA GeForce RTX 4090 whole" '^  2 NVIDIA GeForce RTX 4090 +40%' "$TMP/ws"
COLUMNS=60 "$GPUCTL" status >"$TMP/ws"
check_grep "60 columns: the redundant words dropped, the model kept" '^  2 RTX 4090 +40%' "$TMP/ws"
sed 's/^name = NVIDIA GeForce RTX 4090$/name = NVIDIA RTX PRO 6000 Blackwell Server Edition Max-Q/' \
	"$MACHINES/workstation-mixed.machine" >"$TMP/long.machine"
use_machine "$TMP/long.machine"
COLUMNS=100 "$GPUCTL" status >"$TMP/ws"
check_grep "100 columns: a 50-character name whole" '^  2 NVIDIA RTX PRO 6000 Blackwell Server Edition Max-Q +40%' "$TMP/ws"
COLUMNS=80 "$GPUCTL" status >"$TMP/ws"
check_grep "80 columns: cut after the redundant word, marked with …" '^  2 RTX PRO 6000 Blackwell Serve…  +40%' "$TMP/ws"
check_eq "and the table still fits" "" "$(wider 80 "$TMP/ws")"
use_machine "$M"
# User names are not cut at 10 columns when there is room.
longuser=$(awk -F: 'length($1) > 10 {print $1; exit}' /etc/passwd)
if [ "$(id -u)" = 0 ] && [ -n "$longuser" ] && command -v setpriv >/dev/null; then
	chmod 755 "$TMP" # the sleeper, as that user, says it is ready in a file here
	setpriv --reuid="$longuser" --regid="$(id -g "$longuser")" --clear-groups "$B/sleeper" & P4=$!
	await_line "^$P4\$" "$SLEEPER_READY"
	sed "s/^pid = 4000106/pid = $P4/" "$M" >"$TMP/u.machine"
	use_machine "$TMP/u.machine"
	COLUMNS=80 "$GPUCTL" status >"$TMP/u"
	check_grep "a ${#longuser}-character user name whole at 80 columns" "^      $longuser +$P4 " "$TMP/u"
	COLUMNS=60 "$GPUCTL" status >"$TMP/u"
	check_grep "cut with … only when there is no room (60 columns)" "^      ${longuser:0:9}… +$P4 " "$TMP/u"
	kill $P4
	use_machine "$M"
else
	skip "long user names" "needs root, setpriv and a user name over 10 characters" 2
fi
check_eq "no colour when not a terminal" "" "$(grep -c $'\033' "$TMP/table" | grep -v '^0$')"
"$GPUCTL" status --color=always >"$TMP/c"
check_grep "--color=always colours" $'\033\\[' "$TMP/c"
check_grep "a free GPU's load is green" $'^  1 .*\033\\[32m *0%' "$TMP/c"
check_eq "a busy GPU's low load is not (GPU 3: 3%, a process)" "" "$(grep -a '^  3 ' "$TMP/c" | grep -a $'\033\\[32m')"
NO_COLOR=1 "$GPUCTL" status --color=always >"$TMP/c"
check_grep "--color=always beats NO_COLOR" $'\033\\[' "$TMP/c"
check_exit "--color=sometimes is a usage error" 2 "$GPUCTL" status --color=sometimes

"$GPUCTL" status --json >"$TMP/out"
check "JSON parses" jq -e . "$TMP/out"
check_eq "visible process" "{\"pid\":$P1,\"user\":\"$(id -un)\",\"command\":\"python3 train.py --epochs 10\",\"used_memory_mib\":70000,\"type\":\"compute\"}" \
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
check_grep "names what is missing" 'no GPU with index 9 \(nor that board serial\): this machine has 8 GPUs' "$TMP/stderr"
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
