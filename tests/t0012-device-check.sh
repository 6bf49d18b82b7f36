#!/usr/bin/env bash
# t0012-device-check.sh: tests/device/check.sh, the check for a lent GPU machine, run against the
# stand-in NVML and libcuda with a recorded nvidia-smi (tests/device/fake-nvidia-smi replaying
# the real H200 590 capture, tests/device/recorded/h200-idle.txt), so that it cannot rot: it
# passes on an agreeing machine, and fails, naming the difference, when one is injected (a
# field's value, a process nvidia-smi lists and gpuctl would not) or when the library lacks
# calls (the old-driver stand-in: the fallbacks it took are recorded).
. "$(dirname "$0")/lib/lib.sh"
plan 12
use_machine "$MACHINES/h200-idle.machine"
mkdir -p "$TMP/procs"
export FAKENVML_PROC_DIR=$TMP/procs GPUCTL_CUDA_LIBRARY=$B/fakecuda/libcuda.so.1 \
	FAKECUDA_DEVICES=GPU-3f1c2a9e-7b45-4c1d-9e2a-8d6b5f4e3c21@00000000:83:00.0 \
	NVIDIA_SMI=$ROOT/tests/device/fake-nvidia-smi FAKE_SMI_RECORD=$ROOT/tests/device/recorded/h200-idle.txt \
	GPUCTL=$GPUCTL CUDA_HOLD=$B/cuda-hold
run_check() { OUT=$TMP/$1 "$ROOT/tests/device/check.sh" >"$TMP/$1.out" 2>&1; echo $? >"$TMP/$1.rc"; }

run_check agree
check_eq "an agreeing machine: exit 0" 0 "$(cat "$TMP/agree.rc")"
check_grep "-L, the stable fields in both formats, errors, the workload: all compared" \
	'^1[0-9] passed, 0 failed' "$TMP/agree.out"
check_grep "the workload was listed by both" '^ok - both list pid [0-9]+$' "$TMP/agree.out"
check "everything under one folder: 212 fields of each, the library's exports, what gpuctl resolved" \
	test -s "$TMP/agree/all.gpuctl.csv" -a -s "$TMP/agree/nvml-exports.txt" -a -s "$TMP/agree/nvml-resolved.txt" -a -s "$TMP/agree/check.log"
check_eq "the workload's process file is gone" "" "$(ls "$TMP/procs")"

FAKE_SMI_INJECT='vbios_version=96.00.A5.00.04;power.max_limit=650.00 W' run_check vbios
check_eq "an injected difference: exit 1" 1 "$(cat "$TMP/vbios.rc")"
check_grep "the report names the field and both values" \
	'vbios_version: nvidia-smi "96.00.A5.00.04", gpuctl "96.00.A5.00.03"' "$TMP/vbios.out"
check_grep "a difference in noheader,nounits is named too" \
	'power.max_limit \[W\]: nvidia-smi "650.00", gpuctl "700.00"' "$TMP/vbios.out"

FAKE_SMI_HIDE_PIDS=1 run_check procs
check_eq "a process list that differs: exit 1" 1 "$(cat "$TMP/procs.rc")"
check_grep "named" '^not ok - pid [0-9]+ not listed by both' "$TMP/procs.out"

use_machine "$MACHINES/h200-idle.machine" "$FAKE_OLD"
run_check old
check_eq "an old library: the fields it cannot give differ, exit 1" 1 "$(cat "$TMP/old.rc")"
check_grep "the fallbacks it took are recorded" '^resolve (nvmlDeviceGetTemperature|missing): nvmlDeviceGetTemperatureV' \
	"$TMP/old/nvml-fallbacks.txt"
