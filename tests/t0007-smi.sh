#!/usr/bin/env bash
# t0007-smi.sh: the nvidia-smi fields byte for byte (golden files from the documented captures),
# `status -L`, per-process utilisation and its lastSeenTimeStamp protocol, values that change over
# time, what a refresh asks NVML for, MiB rounded as nvidia-smi does, a GPU lost mid-refresh, the
# MIG UUID of `map --json`, and the stand-in's exported symbols.
. "$(dirname "$0")/lib/lib.sh"
plan 76
GOLD=$ROOT/tests/golden
export FAKENVML_STATS=$TMP/stats

# ---- every documented field, in three captured states, byte for byte ----
F=$(cat "$GOLD/h200.fields")
for state in idle load mig; do
	use_machine "$MACHINES/h200-$state.machine"
	{ "$GPUCTL" status --query-gpu="$F" --format=csv
	  "$GPUCTL" status --query-gpu="$F" --format=csv,noheader,nounits; } >"$TMP/got" 2>&1
	if cmp -s "$GOLD/h200-$state.csv" "$TMP/got"; then ok "H200 $state: CSV as nvidia-smi prints it"; else
		not_ok "H200 $state: CSV as nvidia-smi prints it" "$(diff "$GOLD/h200-$state.csv" "$TMP/got")"; fi
done
use_machine "$MACHINES/h200-idle.machine"
"$GPUCTL" status --format=csv --query-gpu=clocks_throttle_reasons.supported,clocks_throttle_reasons.active,clocks_throttle_reasons.gpu_idle,clocks_throttle_reasons.applications_clocks_setting,clocks_throttle_reasons.sw_power_cap,clocks_throttle_reasons.hw_slowdown,clocks_throttle_reasons.hw_thermal_slowdown,clocks_throttle_reasons.hw_power_brake_slowdown,clocks_throttle_reasons.sw_thermal_slowdown,clocks_throttle_reasons.sync_boost,gpu_serial,gpu.power.requested_limit,gpu.power.current_limit,gpu.power.default_limit,gpu.power.min_limit,gpu.power.max_limit,clocks.max.gr,clocks.max.mem,pcie.link.gen.gpucurrent,pcie.link.gen.gpumax,display_attached,pci.sub_device_id,clocks.video >"$TMP/got"
check_eq "old throttle names and aliases print the canonical headers" "$(cat "$GOLD/h200-aliases.csv")" "$(cat "$TMP/got")"

# nvidia-smi's -lms MS (--loop-ms): getopt read "-lms 500" as -l "ms", and refused the 500.
check_exit "-lms 100 -c 2, as nvidia-smi writes it" 0 timeout 30 "$GPUCTL" status --query-gpu=index --format=csv,noheader -i 0 -lms 100 -c 2
check_eq "  two refreshes" "0 0" "$(tr '\n' ' ' <"$TMP/stdout" | sed 's/ $//')"

# A real row (RTX 2080, driver 440.64, Ricks-Lab/gpu-utils#83), UUID masked in the source.
cat >"$TMP/rtx2080.machine" <<'EOF'
driver_version = 440.64
[gpu]
name = GeForce RTX 2080
uuid = GPU-0f3c1b2a-5d6e-7f80-91a2-b3c4d5e6f708
pci_bus_id = 00000000:01:00.0
vbios_version = 90.04.23.00.5F
memory_total_mib = 7979
memory_used_mib = 6500
power_mw = 176980
power_limit_mw = 200000
power_management_limit_mw = 200000
power_min_limit_mw = 105000
power_max_limit_mw = 292000
temperature = 45
clock_graphics = 1965
clock_sm = 1965
clock_memory = 7199
util_gpu = 86
util_memory = 55
fan = 100
pcie_width = 8
pstate = 2
EOF
use_machine "$TMP/rtx2080.machine"
"$GPUCTL" status --query-gpu=power.limit,power.min_limit,power.max_limit,memory.total,vbios_version,driver_version,name,uuid,power.draw,temperature.gpu,temperature.memory,clocks.gr,clocks.sm,clocks.mem,utilization.gpu,utilization.memory,fan.speed,pcie.link.width.current,pstate --format=csv,noheader,nounits >"$TMP/got"
check_eq "a captured nvidia-smi row, byte for byte" "200.00, 105.00, 292.00, 7979, 90.04.23.00.5F, 440.64, GeForce RTX 2080, GPU-0f3c1b2a-5d6e-7f80-91a2-b3c4d5e6f708, 176.98, 45, N/A, 1965, 1965, 7199, 86, 55, 100, 8, P2" "$(cat "$TMP/got")"
"$GPUCTL" status --query-gpu=display_mode,serial --format=csv,noheader >"$TMP/got"
check_eq "before 590 display_mode is the driver's answer; no serial is [N/A]" "[N/A], [N/A]" "$(cat "$TMP/got")"

# The captured compute-apps row (H200, 590.48.01), with a live process named as the captured one.
spawn /root/tools/memhog; HOG=$SPAWNED
sed "s/^pid = 4010291/pid = $HOG/" "$MACHINES/h200-load.machine" >"$TMP/m"
use_machine "$TMP/m"
"$GPUCTL" status --query-compute-apps=timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory --format=csv,noheader -l 0.01 -c 1 >"$TMP/got"
check_eq "a captured compute-apps row, byte for byte (timestamp aside)" "NVIDIA H200, 00000000:83:00.0, 0000000000000, GPU-3f1c2a9e-7b45-4c1d-9e2a-8d6b5f4e3c21, $HOG, /root/tools/memhog, 2566 MiB" "$(head -1 "$TMP/got" | cut -d, -f2-8 | sed 's/^ //')"
check_grep "its timestamp as nvidia-smi writes it" '^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}, ' "$TMP/got"
kill $HOG; wait $HOG 2>/dev/null

# What the driver refuses shows in its own words, as nvidia-smi prints it.
{ echo "fail.nvmlDeviceGetSerial = NO_PERMISSION"; echo "fail.nvmlDeviceGetPowerManagementLimit = UNKNOWN"
  cat "$MACHINES/h200-idle.machine"; } >"$TMP/m"
use_machine "$TMP/m"
"$GPUCTL" status --query-gpu=serial,power.limit,enforced.power.limit --format=csv,noheader >"$TMP/got"
check_eq "refused fields: [Insufficient Permissions], [Unknown Error]" "[Insufficient Permissions], [Unknown Error], 700.00 W" "$(cat "$TMP/got")"

# ---- power.limit is the requested limit, enforced.power.limit the enforced one ----
sed 's/^power_limit_mw = 700000/power_limit_mw = 650000/' "$MACHINES/h200-idle.machine" >"$TMP/m"
use_machine "$TMP/m"
"$GPUCTL" status --query-gpu=power.limit,enforced.power.limit --format=csv >"$TMP/got"
check_eq "power.limit and enforced.power.limit: own headers, own values" $'power.limit [W], enforced.power.limit [W]\n700.00 W, 650.00 W' "$(cat "$TMP/got")"

# ---- status -L ----
use_machine "$MACHINES/h200-mig.machine"
check_exit "status -L" 0 "$GPUCTL" status -L
check_eq "-L lists the GPU and its MIG devices as nvidia-smi -L" "$(cat "$GOLD/h200-mig-L.txt")" "$(cat "$TMP/stdout")"
use_machine "$MACHINES/h100x8.machine"
"$GPUCTL" status --list-gpus -i 3 >"$TMP/got"
check_eq "--list-gpus with -i" "GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-36f675cc-81e7-4ef5-e8e2-5d940ed90475)" "$(cat "$TMP/got")"
check_exit "-L with --json is a usage error" 2 "$GPUCTL" status -L --json

# ---- memory in MiB, rounded up as nvidia-smi does ----
use_machine "$MACHINES/h200-load.machine"
"$GPUCTL" status --json >"$TMP/out"
check_eq "JSON memory: reserved 613.25 MiB is 614, free 110795.5 is 110796" '[143771,614,32363,110796]' "$(jqv '.gpus[0] | [.memory_total_mib,.memory_reserved_mib,.memory_used_mib,.memory_free_mib]')"
"$GPUCTL" status --no-processes >"$TMP/got"
check_grep "table memory rounded the same way" '^  0 NVIDIA H200 +100% +32363 / 143771 MiB ' "$TMP/got"

# ---- per-process utilisation ----
check_eq "per-process sm/mem/enc/dec in JSON" '[[4010291,0,3,0,0],[4010305,97,38,0,0]]' "$(jqv '[.gpus[0].processes[] | [.pid,.utilization_sm_pct,.utilization_memory_pct,.utilization_encoder_pct,.utilization_decoder_pct]]')"
use_machine "$MACHINES/h100x8.machine"
"$GPUCTL" status --json >"$TMP/out"
check_eq "a process without a sample (idle) has null utilisation" '[null,null,null,null]' "$(jqv '.gpus[5].processes[0] | [.utilization_sm_pct,.utilization_memory_pct,.utilization_encoder_pct,.utilization_decoder_pct]')"
use_machine "$MACHINES/h200-mig.machine"
rm -f "$TMP/stats"
"$GPUCTL" status --json >"$TMP/out"
check_eq "no samples under MIG: null" 'null' "$(jqv '.gpus[0].processes[0].utilization_sm_pct')"
check_eq "and no call made for them" "" "$(grep 'ProcessUtilization\|ProcessesUtilization' "$TMP/stats")"
rm -f "$TMP/stats"

# The driver samples once per read-out (proc_sample_period = read), so each refresh of a loop sees
# exactly the next sample; a pid the process lists do not show and percentages over 100 (both seen
# on real drivers) are dropped.
{ echo "proc_sample_period = read"; sed '/^\[process\]/,$d' "$MACHINES/h200-idle.machine"
  printf '[process]\ngpu = 0\npid = 4020001\nused_memory_mib = 1000\nsm_util = 10 20 30\nmem_util = 1 2 3\n\n'
  printf '[process]\ngpu = 0\npid = 4020002\nused_memory_mib = 1000\nsm_util = 250\n\n'
  printf '[process]\ngpu = 0\npid = 4020003\ntype = gone\nsm_util = 50\n'; } >"$TMP/m"
use_machine "$TMP/m"
"$GPUCTL" status --json -l 0.01 -c 3 >"$TMP/loop"
check_eq "samples in order across refreshes" '[10,1] [20,2] [30,3]' "$(jq -c '.gpus[0].processes[0] | [.utilization_sm_pct,.utilization_memory_pct]' "$TMP/loop" | tr '\n' ' ' | sed 's/ $//')"
check_eq "a sample over 100% is dropped" 'null null null' "$(jq -c '.gpus[0].processes[1].utilization_sm_pct' "$TMP/loop" | tr '\n' ' ' | sed 's/ $//')"
check_eq "a pid in no process list is not shown" '[4020001,4020002]' "$(head -1 "$TMP/loop" | jq -c '[.gpus[0].processes[].pid]')"
for lib in "$FAKE_OLD" "$FAKE_R535"; do
	use_machine "$TMP/m" "$lib"
	"$GPUCTL" status --json -l 0.01 -c 2 >"$TMP/loop"
	check_eq "$(basename "$(dirname "$lib")"): the old per-process call, same protocol" '10 20' "$(jq -c '.gpus[0].processes[0].utilization_sm_pct' "$TMP/loop" | tr '\n' ' ' | sed 's/ $//')"
done

use_machine "$MACHINES/h200-load.machine" "$FAKE_OLD"
"$GPUCTL" status --query-gpu=clocks_event_reasons.active,pcie.link.gen.gpumax,temperature.memory,power.limit --format=csv,noheader >"$TMP/got"
check_eq "old driver: the throttle-named call; a call it lacks prints [Function Not Found], as nvidia-smi does" "0x0000000000000000, [Function Not Found], N/A, 700.00 W" "$(cat "$TMP/got")"

# ---- values that change: per read, and with time ----
sed 's/^util_gpu = 0/util_gpu = 5 50 95/; s/^temperature = 27/temperature = 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 \/ 40ms/' "$MACHINES/h200-idle.machine" >"$TMP/m"
use_machine "$TMP/m"
"$GPUCTL" status --query-gpu=utilization.gpu,temperature.gpu --format=csv,noheader,nounits -l 0.05 -c 8 >"$TMP/loop"
check_eq "a list advances at every read" '5 50 95 5 50 95 5 50' "$(cut -d, -f1 "$TMP/loop" | tr '\n' ' ' | sed 's/ $//')"
check "a timed list changes with time, within its values" awk -F', ' '$2 < 30 || $2 > 45 {bad=1} {seen[$2]=1} END {n=0; for (v in seen) n++; exit bad || n < 2}' "$TMP/loop"

# ---- a refresh asks only for what the output shows ----
use_machine "$MACHINES/h100x8.machine"
rm -f "$TMP/stats"
"$GPUCTL" status --json -l 0.01 -c 3 >/dev/null
check_eq "status --json asks for no extra field" "" "$(grep -E '^nvmlDevice(GetSerial|GetVbiosVersion|GetMaxClockInfo|GetPcieThroughput|GetFieldValues|GetEncoderUtilization|GetCurrPcieLinkGeneration|GetPerformanceState|GetClockInfo|GetFanSpeed|GetPowerManagement|GetTemperatureThreshold) ' "$TMP/stats")"
check_grep "status --json reads per-process utilisation" '^nvmlDeviceGetProcessesUtilizationInfo [0-9]+$' "$TMP/stats"
rm -f "$TMP/stats"
"$GPUCTL" status --query-gpu=serial,clocks.max.sm,power.max_limit --format=csv -l 0.01 -c 3 >/dev/null
check_eq "static facts are read once per GPU, not per refresh" "nvmlDeviceGetMaxClockInfo 32 nvmlDeviceGetSerial 8" "$(grep -E '^nvmlDevice(GetSerial|GetMaxClockInfo) ' "$TMP/stats" | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "and nothing else extra" "" "$(grep -E '^nvmlDevice(GetPcieThroughput|GetEncoderUtilization|GetFanSpeed|ProcessesUtilization) ' "$TMP/stats")"
rm -f "$TMP/stats"
# --query-compute-apps shows compute processes only, as nvidia-smi: the graphics lists are not
# read (a call a GPU), a process in both lists is listed once with its compute memory, and a GPU
# whose graphics list fails still lists its compute processes (status --json cannot: null).
"$GPUCTL" status --query-compute-apps=pid,used_memory --format=csv,noheader >"$TMP/got"
check_eq "compute-apps reads no graphics list" "" "$(grep '^nvmlDeviceGetGraphicsRunningProcesses' "$TMP/stats")"
check_grep "  the compute lists" '^nvmlDeviceGetComputeRunningProcesses_v3 [0-9]+$' "$TMP/stats"
check_eq "  the compute+graphics process, once" 1 "$(grep -c '^4000106, ' "$TMP/got")"
rm -f "$TMP/stats"
awk '{print} /^\[gpu\]/ && ++g == 7 {print "fail.nvmlDeviceGetGraphicsRunningProcesses = UNKNOWN"}' "$MACHINES/h100x8.machine" >"$TMP/gfail"
use_machine "$TMP/gfail"
"$GPUCTL" status --query-compute-apps=pid --format=csv,noheader >"$TMP/got" 2>/dev/null
check_grep "a failing graphics list: its GPU's compute processes still listed" '^4000106$' "$TMP/got"
"$GPUCTL" status --json >"$TMP/out" 2>/dev/null
check_eq "  status --json, which shows every process, says it cannot list them" null "$(jqv '.gpus[6].processes')"
# A GPU whose compute list fails has no rows: said on stderr, not left to read as "none running".
awk '{print} /^\[gpu\]/ && ++g == 7 {print "fail.nvmlDeviceGetComputeRunningProcesses = UNKNOWN"}' "$MACHINES/h100x8.machine" >"$TMP/cfail"
use_machine "$TMP/cfail"
check_exit "a failing compute list: the query still answers" 0 "$GPUCTL" status --query-compute-apps=pid --format=csv,noheader
check_grep "  and says which GPU has no rows, and why" '^gpuctl status: GPU 6: its processes could not be listed \(Unknown Error\); it has no rows here$' "$TMP/stderr"
check "  the other GPUs' processes still listed" test -s "$TMP/stdout"
use_machine "$MACHINES/h100x8.machine"

# ---- a GPU lost mid-refresh keeps nothing: every output agrees ----
awk '/^\[gpu\]/{g++} {print} /^\[gpu\]/ && g==3 {print "fail.nvmlDeviceGetMemoryInfo = GPU_IS_LOST"}' "$MACHINES/h100x8.machine" >"$TMP/lost"
use_machine "$TMP/lost"
check_exit "lost GPU: exit 5" 5 "$GPUCTL" status --json
cp "$TMP/stdout" "$TMP/out"
check_eq "JSON: lost, every reading null, processes null" '{"lost":true,"memory_used_mib":null,"utilization_gpu_pct":null,"temperature_c":null,"power_w":null,"power_limit_w":null,"compute_mode":null,"mig_mode":null,"processes":null}' "$(jqv '.gpus[2] | {lost,memory_used_mib,utilization_gpu_pct,temperature_c,power_w,power_limit_w,compute_mode,mig_mode,processes}')"
check_eq "JSON: the others are whole" '[98,false,1]' "$(jqv '[.gpus[0].utilization_gpu_pct, .gpus[3].lost, (.gpus[3].processes | length)]')"
"$GPUCTL" status --query-gpu=index,power.draw,enforced.power.limit,fan.speed,clocks.sm,temperature.gpu,pstate,compute_mode --format=csv,noheader -i 2 >"$TMP/got" 2>/dev/null
check_eq "CSV: every reading of the lost GPU is the driver's words (not [N/A]: unsupported)" \
	"2, [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost]" "$(cat "$TMP/got")"
"$GPUCTL" status --query-gpu=index,uuid,clocks_event_reasons.active,pcie.link.width.max --format=csv,noheader -i 2 >"$TMP/got" 2>/dev/null
check_eq "  the extended fields too; its identity stays" "2, GPU-$(awk '/^uuid = GPU-/ {n++} n == 3 {sub(/^uuid = GPU-/, ""); print; exit}' "$TMP/lost"), [GPU is lost], [GPU is lost]" "$(cat "$TMP/got")"
"$GPUCTL" status --query-compute-apps=pid,gpu_bus_id --format=csv,noheader >"$TMP/got" 2>/dev/null
check_eq "CSV apps: no process of the lost GPU" "" "$(grep '3A:00.0' "$TMP/got")"
"$GPUCTL" status >"$TMP/got" 2>/dev/null
check_eq "table: LOST and nothing under it" "  2 NVIDIA H100 80GB HBM3  LOST: GPU is lost|  3 NVIDIA H100 80GB HBM3    3%     512 / 81559 MiB   33C     89 / 700 W" "$(grep -A1 '^  2 ' "$TMP/got" | tr '\n' '|' | sed 's/|$//')"

# ---- the exporter: the new metrics, and the lost GPU left out ----
for machine in h100x8 lost; do
	[ $machine = h100x8 ] && use_machine "$MACHINES/h100x8.machine" || use_machine "$TMP/lost"
	start_exporter
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.$machine"
	stop_exporter
done
M=$TMP/metrics.h100x8
check_eq "exporter: per-process utilisation by engine" 4 "$(grep -c '^gpuctl_process_utilization_percent{gpu="6",.*pid="4000106".*engine="\(sm\|memory\|encoder\|decoder\)"} ' "$M")"
check_grep "exporter: the encoder's share" '^gpuctl_process_utilization_percent\{gpu="6",.*engine="encoder"\} 25$' "$M"
check_grep "exporter: encoder utilisation" '^gpuctl_gpu_encoder_utilization_percent\{gpu="6",.*\} 25$' "$M"
check_grep "exporter: memory temperature" '^gpuctl_gpu_memory_temperature_celsius\{gpu="1",.*\} 48$' "$M"
check_grep "exporter: clock event reasons" '^gpuctl_gpu_clocks_event_reasons\{gpu="1",.*\} 1$' "$M"
check_grep "exporter: PCIe link" '^gpuctl_gpu_pcie_link_generation\{gpu="0",.*\} 5$' "$M"
check_grep "exporter: video clock" '^gpuctl_gpu_clock_hertz\{gpu="0",.*clock="video"\} 1545000000$' "$M"
if command -v promtool >/dev/null; then
	check "exporter: promtool check metrics" sh -c "promtool check metrics <'$M'"
else
	skip "promtool" "the prometheus package is not installed"
fi
M=$TMP/metrics.lost
check_grep "exporter: the lost GPU is reported" '^gpuctl_gpu_lost\{gpu="2",.*\} 1$' "$M"
check_eq "exporter: and has no samples but its identity and error count" "" "$(grep '{gpu="2"' "$M" | grep -v '^gpuctl_\(gpu_info\|gpu_lost\|nvml_errors_total\|gpu_leased\){')"

# ---- map --json: one uuid key per device ----
use_machine "$MACHINES/a100-mig.machine"
CUDA_VISIBLE_DEVICES=MIG-92276658-1e27-a1c0-8a6a-63ec24ede6a4 "$GPUCTL" map --json >"$TMP/out"
check "map --json has no repeated key" python3 -c 'import json,sys
def nodup(pairs):
    keys=[k for k,_ in pairs]
    if len(keys) != len(set(keys)): sys.exit("repeated key in %s" % keys)
    return dict(pairs)
json.load(open(sys.argv[1]), object_pairs_hook=nodup)' "$TMP/out"
check_eq "a MIG device's uuid is its MIG UUID, its parent's is parent_uuid" '["MIG-92276658-1e27-a1c0-8a6a-63ec24ede6a4","GPU-6b4cb242-4a23-d596-2217-beaddbc496cb"]' "$(jqv '.devices[0] | [.uuid,.parent_uuid]')"

# ---- the stand-in exports NVML's symbols and nothing else ----
if command -v nm >/dev/null; then
	for lib in "$FAKE" "$FAKE_OLD" "$FAKE_R535"; do
		check_eq "$(basename "$(dirname "$lib")") exports only nvml* symbols" "" "$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^nvml')"
	done
else
	skip "exported symbols" "nm (binutils) is not installed"
fi

# ---- NVIDIA's own bindings read the stand-in (when pynvml is installed) ----
if python3 -c 'import pynvml' 2>/dev/null; then
	LD_LIBRARY_PATH=$(dirname "$FAKE") FAKENVML_MACHINE=$MACHINES/h200-load.machine python3 "$ROOT/tests/helper/pynvml_check.py"
else
	skip "pynvml" "NVIDIA's Python bindings (nvidia-ml-py, Debian python3-pynvml) are not installed" 12
fi
