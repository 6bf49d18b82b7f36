#!/usr/bin/env bash
# tests/device/check.sh: gpuctl against the real NVIDIA driver and nvidia-smi, on a machine with
# GPUs (not part of `make test`). One short run; prints what agreed and what did not.
#   make && tests/device/check.sh
set -u
cd "$(dirname "$0")/../.."
G=${GPUCTL:-build/gpuctl}
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "not ok - $1"; shift; printf '#   %s\n' "$@"; fail=$((fail + 1)); }
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi here"; exit 2; }
nvidia-smi -L
# Fields that do not move between two calls a few ms apart.
F=index,uuid,name,pci.bus_id,memory.total,power.limit,compute_mode,driver_version,mig.mode.current,persistence_mode,compute_cap
want=$(nvidia-smi --query-gpu=$F --format=csv 2>&1)
got=$("$G" status --query-gpu=$F --format=csv 2>&1)
[ "$want" = "$got" ] && ok "--query-gpu csv matches nvidia-smi ($F)" || bad "--query-gpu csv differs" "$(diff <(echo "$want") <(echo "$got"))"
want=$(nvidia-smi --query-gpu=$F --format=csv,noheader,nounits)
got=$("$G" status --query-gpu=$F --format=csv,noheader,nounits)
[ "$want" = "$got" ] && ok "noheader,nounits matches" || bad "noheader,nounits differs" "$(diff <(echo "$want") <(echo "$got"))"
want=$(nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,gpu_bus_id --format=csv | sort)
got=$("$G" status --query-compute-apps=pid,process_name,gpu_uuid,gpu_bus_id --format=csv | sort)
[ "$want" = "$got" ] && ok "--query-compute-apps matches" || bad "--query-compute-apps differs" "$(diff <(echo "$want") <(echo "$got"))"
# Memory used moves a little; compare within 64 MiB.
paste -d' ' <(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits) \
	<("$G" status --query-gpu=memory.used --format=csv,noheader,nounits) |
	awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 64) bad = 1} END {exit bad}' &&
	ok "memory.used within 64 MiB of nvidia-smi" || bad "memory.used differs by more than 64 MiB"
"$G" status --json >/tmp/gpuctl-device.json && python3 -m json.tool /tmp/gpuctl-device.json >/dev/null &&
	ok "status --json parses" || bad "status --json"
"$G" status && ok "status table" || bad "status exit $?"
"$G" map --verify && ok "map --verify agrees with the CUDA driver (unset)" || bad "map --verify (unset): exit $?"
CUDA_VISIBLE_DEVICES=0 "$G" map --verify >/dev/null && ok "map --verify, CUDA_VISIBLE_DEVICES=0" || bad "map --verify CVD=0: exit $?"
n=$(nvidia-smi -L | grep -c '^GPU')
if [ "$n" -ge 1 ]; then
	CUDA_VISIBLE_DEVICES=$((n - 1)),0-1 "$G" map --verify >/dev/null && ok "map --verify with a range" || bad "map --verify range: exit $?"
	export GPUCTL_STATE_DIR=$(mktemp -d)
	out=$("$G" run -n 1 --ignore-usage -- sh -c 'echo $GPUCTL_LEASE_GPUS; nvidia-smi -L | head -1' 2>&1)
	echo "$out" | head -1 | grep -q '^GPU-' && ok "run leases a GPU: $(echo "$out" | head -1)" || bad "run" "$out"
	if python3 -c 'import torch' 2>/dev/null; then
		u=$("$G" run -n 1 --ignore-usage -- python3 -c 'import torch; print(torch.cuda.device_count(), torch.cuda.get_device_properties(0).uuid)' 2>&1)
		echo "# torch in a lease: $u"
	fi
	"$G" doctor; echo "# doctor exit $?"
fi
# issue 26: `gpuctl topo` beside `nvidia-smi topo -m`: the GPU columns, CPU Affinity and NUMA
# Affinity of every GPU row (nvidia-smi's NIC columns and escapes left out).
topo_cells() {   # FILE: "GPUn cell... cpus numa" per GPU row, from the header's GPU columns
	sed 's/\x1b\[[0-9;]*m//g' "$1" | awk -F'\t' '
		NR == 1 {for (i = 2; i <= NF; i++) {h = $i; gsub(/^ +| +$/, "", h); if (h ~ /^GPU[0-9]+$/ || h == "CPU Affinity" || h == "NUMA Affinity") keep[i] = 1}; next}
		/^GPU[0-9]+\t/ {s = $1; for (i = 2; i <= NF; i++) if (keep[i]) {c = $i; gsub(/^ +| +$/, "", c); s = s " " c}; print s}'
}
nvidia-smi topo -m >/tmp/smi-topo.txt 2>&1 && "$G" topo >/tmp/gpuctl-topo.txt 2>&1
if [ "$(topo_cells /tmp/smi-topo.txt)" = "$(topo_cells /tmp/gpuctl-topo.txt)" ] && [ -n "$(topo_cells /tmp/gpuctl-topo.txt)" ]; then
	ok "topo matches nvidia-smi topo -m (GPU columns, CPU and NUMA affinity)"
else
	bad "topo differs from nvidia-smi topo -m" "$(diff <(topo_cells /tmp/smi-topo.txt) <(topo_cells /tmp/gpuctl-topo.txt))"
fi
if command -v valgrind >/dev/null; then
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$G" status --json >/dev/null 2>/tmp/vg.txt &&
		ok "valgrind clean against the real NVML" || bad "valgrind" "$(head -20 /tmp/vg.txt)"
fi
t0=$(date +%s%N); for i in $(seq 20); do "$G" status --json >/dev/null; done; t1=$(date +%s%N)
t2=$(date +%s%N); for i in $(seq 20); do nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv >/dev/null; done; t3=$(date +%s%N)
echo "# status --json $(( (t1 - t0) / 20000000 )) ms per run; nvidia-smi --query-gpu $(( (t3 - t2) / 20000000 )) ms"
echo "$pass passed, $fail failed"
