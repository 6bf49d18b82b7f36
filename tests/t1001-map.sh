#!/usr/bin/env bash
# t1001-map.sh: `gpuctl map` and `gpuctl which` on simulated machines, --pid, and --verify's
# plumbing with a stand-in libcuda that only reports the list the test gives it.
. "$(dirname "$0")/lib/lib.sh"
plan 59
export GPUCTL_CUDA_LIBRARY=$B/fakecuda/libcuda.so.1
W=$MACHINES/workstation-mixed.machine
use_machine "$W"
U=($(awk '/^uuid = GPU/{print $3}' "$W"))

"$GPUCTL" map --json >"$TMP/out"
check_eq "unset: every GPU, most capable first (estimated)" '[2,1,0]' "$(jqv '[.devices[].nvml_index]')"
check_eq "unset: not exact on a mixed machine" 'false' "$(jqv '.order_exact')"
check_eq "the variables as seen" '[null,"FASTEST_FIRST",null]' "$(jqv '[.cuda_visible_devices,.cuda_device_order,.cuda_device_order_env]')"
check_eq "order_differs warned" '["order_differs"]' "$(jqv '[.warnings[].code]')"
check_eq "per GPU: both CUDA numberings and the logical index" '[[0,2,0,2],[1,1,1,1],[2,0,2,0]]' \
	"$(jqv '[.gpus[] | [.nvml_index,.cuda_index_fastest_first,.cuda_index_pci_bus_id,.logical_index]]')"
check_eq "device fields" "{\"cuda_index\":0,\"nvml_index\":2,\"uuid\":\"${U[2]}\",\"pci_bus_id\":\"00000000:41:00.0\",\"name\":\"NVIDIA GeForce RTX 4090\"}" "$(jqv '.devices[0]')"

CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1,0 "$GPUCTL" map --json >"$TMP/out"
check_eq "environment read: PCI order, 1,0" '[[1,0],true,[2]]' "$(jqv '[[.devices[].nvml_index], .order_exact, [.hidden[].nvml_index]]')"
check_eq "no warnings for a clean PCI_BUS_ID list" '[]' "$(jqv '[.warnings[].code]')"
CUDA_VISIBLE_DEVICES=0 "$GPUCTL" map --visible "0,2-3" --order PCI_BUS_ID --json >"$TMP/out"
check_eq "--visible and --order override the environment" '[[0,2],["range"]]' "$(jqv '[[.devices[].nvml_index],[.warnings[].code]]')"
CUDA_VISIBLE_DEVICES=0 "$GPUCTL" map --unset --json >"$TMP/out"
check_eq "--unset" 'null' "$(jqv '.cuda_visible_devices')"
"$GPUCTL" map --visible "" --json >"$TMP/out"
check_eq "empty string: nothing visible" '[[],["empty"],3]' "$(jqv '[.devices, [.warnings[].code], (.hidden | length)]')"
"$GPUCTL" map --visible "0,0" --json >"$TMP/out"
check_eq "duplicate: set emptied, warning has a message" '["duplicate",true]' "$(jqv '[.warnings[0].code, (.warnings[0].message | test("appears twice"))]')"
"$GPUCTL" map --visible "${U[1]:0:8},1" --json >"$TMP/out"
check_eq "UUID prefix then an ordinal: mixed kinds" '[[1],["mixed_kinds","truncated"]]' "$(jqv '[[.devices[].nvml_index],[.warnings[].code]|sort]')"
check_eq "truncation says which entry and why" 'true' "$(jqv '[.warnings[] | select(.code=="truncated") | .message | test("entry 2 \\(.1.\\)")] | all')"
check_exit "an error-level warning (duplicate ordinal) exits 1, as doctor does" 1 "$GPUCTL" map --visible "0,0"
check_grep "and says why" '^error \[duplicate\]' "$TMP/stdout"
check_exit "warnings alone exit 0" 0 "$GPUCTL" map --visible "${U[1]:0:8},1"
check_grep "(a warning was given)" "^warning \\[mixed_kinds\\]" "$TMP/stdout"
check_exit "bad --order" 2 "$GPUCTL" map --order fastest

"$GPUCTL" map >"$TMP/t"
check_grep "table: header with the variables" '^CUDA_VISIBLE_DEVICES=\(unset\)  CUDA_DEVICE_ORDER=\(unset: FASTEST_FIRST\)$' "$TMP/t"
check_grep "table: estimate marked" '^  0  00000000:01:00.0     2\*       0         2  NVIDIA T400 4GB     +GPU-' "$TMP/t"
check_grep "table: estimate explained" '^\* estimated' "$TMP/t"
check_grep "table: warning in plain language" '^warning \[order_differs\]: CUDA numbers this machine' "$TMP/t"
check_eq "table fits 80 columns" "" "$(awk 'length($0) > 80 && !/^(warning|error|info|\*)/' "$TMP/t")"

# which
check_eq "which: default device 0" "CUDA device 0 is nvidia-smi GPU 2: ${U[2]} at 00000000:41:00.0, NVIDIA GeForce RTX 4090" "$("$GPUCTL" which 2>/dev/null)"
check_exit "which: estimate noted on stderr" 0 "$GPUCTL" which
check_grep "which: the note" 'estimated' "$TMP/stderr"
check_eq "which --format=index" 2 "$("$GPUCTL" which --format=index 2>/dev/null)"
check_eq "which N with PCI order" "${U[1]}" "$(CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,1 "$GPUCTL" which 1 --format=uuid)"
check_eq "which --format=pci" "00000000:21:00.0" "$(CUDA_DEVICE_ORDER=PCI_BUS_ID "$GPUCTL" which 1 --format=pci)"
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1 check_exit "which: not visible" 7 "$GPUCTL" which 1
check_grep "which: says why" 'CUDA device 1 is not visible: CUDA_VISIBLE_DEVICES=1 makes 1 device visible \(0-0\)' "$TMP/stderr"
CUDA_VISIBLE_DEVICES=-1 check_exit "which: nothing visible" 7 "$GPUCTL" which
check_grep "which: explains the variable" 'truncated' "$TMP/stderr"
check_exit "which: bad N" 2 "$GPUCTL" which first

# MIG
use_machine "$MACHINES/a100-mig.machine"
MIG1=$(awk '/^uuid = MIG/{print $3}' "$MACHINES/a100-mig.machine" | sed -n 2p)
"$GPUCTL" map --visible "$MIG1" --json >"$TMP/out"
check_eq "MIG UUID: the instance, with its parent" "[\"$MIG1\",0,1,2,0]" "$(jqv '.devices[0] | [.uuid,.nvml_index,.mig_index,.gpu_instance_id,.compute_instance_id]')"
check_eq "which: a MIG device by index" '0:1' "$(CUDA_VISIBLE_DEVICES=$MIG1 "$GPUCTL" which --format=index)"
P0=$(awk '/^uuid = GPU/{print $3; exit}' "$MACHINES/a100-mig.machine")
"$GPUCTL" map --visible "MIG-$P0/2/0" --json >"$TMP/out"
check_eq "old MIG-GPU-uuid/gi/ci form" "\"$MIG1\"" "$(jqv '.devices[0].uuid')"

# --pid
use_machine "$W"
CUDA_VISIBLE_DEVICES=2 CUDA_DEVICE_ORDER=PCI_BUS_ID "$B/sleeper" & p=$!
await_line "^$p\$" "$SLEEPER_READY"
"$GPUCTL" map --pid $p --json >"$TMP/out"
check_eq "--pid reads the process's variables" '["2","PCI_BUS_ID",[2]]' "$(jqv '[.cuda_visible_devices,.cuda_device_order_env,[.devices[].nvml_index]]')"
check_eq "which --pid" 2 "$("$GPUCTL" which --pid $p --format=index)"
kill $p; wait $p 2>/dev/null
check_exit "--pid of a process that is gone" 1 "$GPUCTL" map --pid $p
check_grep "says it is gone" "no process $p" "$TMP/stderr"
check_exit "--pid junk" 2 "$GPUCTL" map --pid abc
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$GPUCTL" map --pid 1 >"$TMP/stdout" 2>"$TMP/stderr"
	check_eq "--pid of another user's process: refused" 1 $?
	check_grep "permission denied, with advice" 'cannot read the environment of process 1 .*Permission denied; run as that user or as root' "$TMP/stderr"
else
	skip "--pid permission denied" "needs root and setpriv to act as another user" 2
fi

# --verify: the driver's answer against the model
export FAKECUDA_LOG=$TMP/cudalog
FAKECUDA_DEVICES="${U[2]}@0000:41:00.0,${U[1]}@0000:21:00.0,${U[0]}@0000:01:00.0" check_exit "verify: agreement" 0 "$GPUCTL" map --verify
check_grep "verify: says so" '^verified: the CUDA driver sees exactly these 3 devices' "$TMP/stdout"
check_eq "verify: no estimate mark once verified" "" "$(grep -c '^\* estimated' "$TMP/stdout" | grep -v '^0$')"
FAKECUDA_DEVICES="${U[1]}@0000:21:00.0,${U[2]}@0000:41:00.0,${U[0]}@0000:01:00.0" check_exit "verify: disagreement" 9 "$GPUCTL" map --verify
check_grep "verify: names the disagreement, driver as right" "CUDA device 0: gpuctl's model says nvidia-smi GPU 2 .*the CUDA driver says nvidia-smi GPU 1" "$TMP/stdout"
FAKECUDA_DEVICES="${U[1]}@0000:21:00.0" "$GPUCTL" map --verify --json --visible 1 --order PCI_BUS_ID >"$TMP/out"
check_eq "verify: JSON, and the child got the environment under test" '[true,true]' "$(jqv '[.verified,.order_exact]')"
check_eq "verify: child environment" 'CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID' "$(tail -1 "$FAKECUDA_LOG")"
CUDA_VISIBLE_DEVICES=0 check_exit "verify: --unset reaches the child" 9 "$GPUCTL" map --verify --unset
check_eq "verify: child saw it unset" 'CUDA_VISIBLE_DEVICES=(unset) CUDA_DEVICE_ORDER=(unset)' "$(tail -1 "$FAKECUDA_LOG")"
FAKECUDA_DEVICES="" check_exit "verify: nothing visible agrees with an empty list" 0 "$GPUCTL" map --verify --visible ""
FAKECUDA_STDERR_BYTES=300000 FAKECUDA_DEVICES="${U[2]}@0000:41:00.0,${U[1]}@0000:21:00.0,${U[0]}@0000:01:00.0" \
	check_exit "verify: a driver filling stderr does not deadlock the probe" 0 timeout 20 "$GPUCTL" map --verify
FAKECUDA_INIT_ERROR=999 check_exit "verify: cuInit failure" 8 "$GPUCTL" map --verify
GPUCTL_CUDA_LIBRARY=/nonexistent/libcuda.so.1 check_exit "verify: no libcuda" 8 "$GPUCTL" map --verify
check_grep "verify: says there is no CUDA library" 'no CUDA driver library' "$TMP/stderr"
