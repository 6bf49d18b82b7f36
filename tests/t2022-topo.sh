#!/usr/bin/env bash
# t2022-topo.sh: `gpuctl topo` (issue 26) on each simulated machine with a topology, diffed whole
# against tests/golden/<machine>.topo.txt and .topo.json: the matrix as `nvidia-smi topo -m`
# prints it (tab-separated, " X " on the diagonal, NV# over NVLink, else PIX/PXB/PHB/NODE/SYS,
# then CPU Affinity, NUMA Affinity, GPU NUMA ID, then NVIDIA's legend word for word, as in real
# captures of nvidia-smi 535-590). Then what the driver does not say: an older driver without the
# scoped affinity and memory-affinity calls (the CPUs from nvmlDeviceGetCpuAffinity, NUMA N/A), a
# machine file without topology (every cell N/A), a driver refusing the ancestor query.
# GOLDEN_UPDATE=1 rewrites the golden files (review the diff).
. "$(dirname "$0")/lib/lib.sh"
machines=(hgx-h100-nvswitch pcie-2socket workstation-mixed)
plan $((2 * ${#machines[@]} + 10))

for name in "${machines[@]}"; do
	use_machine "$MACHINES/$name.machine"
	"$GPUCTL" topo >"$TMP/$name.topo.txt" 2>"$TMP/err"
	check_golden "$name: topo" "$name.topo.txt" "$TMP/$name.topo.txt"
	"$GPUCTL" topo --json >"$TMP/$name.topo.json" 2>"$TMP/err"
	check_golden "$name: topo --json" "$name.topo.json" "$TMP/$name.topo.json"
done

# The legend is NVIDIA's (real captures: nvidia-smi 535 .. 590), line for line.
cat >"$TMP/legend" <<'LEGEND'
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
LEGEND
sed -n '/^Legend:/,$p' "$TMP/workstation-mixed.topo.txt" >"$TMP/got-legend"
check "legend is nvidia-smi's" diff -u "$TMP/legend" "$TMP/got-legend"

# Every pair of the NVSwitch box is NV18, both ways, in the JSON too.
check_eq "hgx: 56 links, all NV18 (18 NVLinks)" "56 56" \
	"$(jq '[.gpus[].links[] | select(.nvlinks == 18 and .link == "NV18")] | length' "$TMP/hgx-h100-nvswitch.topo.json") \
$(jq '[.gpus[].links[]] | length' "$TMP/hgx-h100-nvswitch.topo.json")"
check_eq "2-socket box: GPU 0's row" "X NV12 NODE NODE SYS SYS SYS SYS 0-15,32-47 0 N/A" \
	"$(awk -F'\t' '$1 == "GPU0" {s = ""; for (i = 2; i <= NF; i++) if ($i != "") s = s (s ? " " : "") $i; gsub(/^ +| +$/, "", s); print s}' "$TMP/pcie-2socket.topo.txt" | sed 's/  */ /g')"
check_eq "workstation: NUMA affinity null, not 0" "null null null" \
	"$(jq -r '[.gpus[].numa_node] | map(tostring) | join(" ")' "$TMP/workstation-mixed.topo.json")"

# An older driver: no ...WithinScope, no memory affinity, no remote device type or _v2 PCI info.
use_machine "$MACHINES/pcie-2socket.machine" "$FAKE_OLD"
"$GPUCTL" topo >"$TMP/old" 2>"$TMP/err"
check_eq "old driver: CPUs from nvmlDeviceGetCpuAffinity, NUMA N/A, NVLinks from the plain call" \
	"GPU4	SYS	SYS	SYS	SYS	 X 	NV12	NODE	NODE	16-31,48-63	N/A		N/A" "$(grep '^GPU4' "$TMP/old")"

use_machine "$MACHINES/hgx-h100-nvswitch.machine" "$FAKE_OLD"
check_eq "old driver, NVSwitch board: links to no GPU are the switches', NV18 where P2P says NVLink" \
	"GPU7	NV18	NV18	NV18	NV18	NV18	NV18	NV18	 X 	56-111,168-223	N/A		N/A" \
	"$("$GPUCTL" topo | grep '^GPU7')"

# No topology in the machine file: the driver says nothing, and neither does gpuctl.
use_machine "$MACHINES/h200-idle.machine"
"$GPUCTL" topo --json >"$TMP/out" 2>"$TMP/err"
check_eq "no topology: cpu_affinity and numa null" '[null,null,null]' \
	"$(jqv '[.gpus[0].cpu_affinity, .gpus[0].numa_node, .gpus[0].gpu_numa_id]')"

# A driver that refuses the ancestor query: N/A cells, the NVLinks still shown.
sed 's/^driver_version = .*/&\nfail.nvmlDeviceGetTopologyCommonAncestor = UNKNOWN/' \
	"$MACHINES/pcie-2socket.machine" >"$TMP/fail.machine"
use_machine "$TMP/fail.machine"
"$GPUCTL" topo >"$TMP/fail" 2>"$TMP/err"
check_eq "ancestor refused: N/A where no NVLink" "GPU0	 X 	NV12	N/A	N/A	N/A	N/A	N/A	N/A	0-15,32-47	0		N/A" \
	"$(grep '^GPU0' "$TMP/fail")"

check_exit "topo takes no argument" 2 "$GPUCTL" topo extra
use_machine "$MACHINES/pcie-2socket.machine" "$TMP/nonexistent.so"
check_exit "topo without NVML: exit 3" 3 "$GPUCTL" topo
