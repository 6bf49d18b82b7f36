#!/usr/bin/env bash
# t0003-errors.sh: every failure class has its exit code and a message that says what to do.
. "$(dirname "$0")/lib/lib.sh"
plan 56
H=$MACHINES/h100x8.machine
M=$TMP/m.machine

use_machine "$H" /nonexistent/libnvidia-ml.so.1
check_exit "missing library named by GPUCTL_NVML_LIBRARY" 3 "$GPUCTL" status
check_grep "says which path failed" 'cannot load NVML from GPUCTL_NVML_LIBRARY=/nonexistent' "$TMP/stderr"
if ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
	skip "no driver installed" "this machine has a real libnvidia-ml.so.1" 3
else
	unset GPUCTL_NVML_LIBRARY
	check_exit "no NVIDIA driver" 3 "$GPUCTL" status
	check_grep "explains: no driver, and the override" 'no NVIDIA driver is installed.*|GPUCTL_NVML_LIBRARY' "$TMP/stderr"
	check_grep "mentions GPUCTL_NVML_LIBRARY" 'GPUCTL_NVML_LIBRARY=/path/to/libnvidia-ml.so.1' "$TMP/stderr"
fi
libm=$(ldconfig -p | awk '/libm\.so\.6 /{print $NF; exit}')
use_machine "$H" "$libm"
check_exit "a library that is not NVML" 3 "$GPUCTL" status
check_grep "says it is not NVML" 'does not look like NVML: it has no nvmlInit' "$TMP/stderr"

{ echo "init_error = DRIVER_NOT_LOADED"; cat "$H"; } >"$M"
use_machine "$M"
check_exit "init failure" 4 "$GPUCTL" status
check_grep "NVML's own error text and a hint" 'NVML failed to initialise: Driver Not Loaded \(the NVIDIA kernel driver is not loaded' "$TMP/stderr"
{ echo "init_error = LIB_RM_VERSION_MISMATCH"; cat "$H"; } >"$M"
check_exit "version mismatch" 4 "$GPUCTL" status --json
check_grep "version mismatch hint" 'reboot or reload' "$TMP/stderr"
check_eq "nothing on stdout on failure" "" "$(cat "$TMP/stdout")"
{ echo "fail.nvmlDeviceGetCount = UNKNOWN"; cat "$H"; } >"$M"
check_exit "count failure" 4 "$GPUCTL" status

# A GPU lost mid-query: shown as lost, the others shown, exit 5.
sed '/^name = NVIDIA H100/{n;n;n;s/$/\nlost_after = 9/}' "$H" | awk 'BEGIN{g=0} /^\[gpu\]/{g++} !(/^lost_after/ && g!=3)' >"$M"
check_eq "(fixture) one GPU loses itself" 1 "$(grep -c lost_after "$M")"
use_machine "$M"
check_exit "lost GPU: non-zero exit" 5 "$GPUCTL" status --json
cp "$TMP/stdout" "$TMP/out"
check_eq "lost GPU shown as lost" '{"index":2,"lost":true,"error":"GPU is lost","memory_used_mib":null,"processes":null}' "$(jqv '.gpus[2] | {index,lost,error,memory_used_mib,processes}')"
check_eq "the others are still shown" '[false,false,false,false,false,false,false]' "$(jqv '[.gpus[] | select(.index != 2) | .lost]')"
check_eq "the others keep their values" '[98,3]' "$(jqv '[.gpus[0].utilization_gpu_pct, .gpus[3].utilization_gpu_pct]')"
check_grep "stderr names the GPU and what to do" 'GPU 2 \(00000000:3A:00.0\) is lost: GPU is lost.*dmesg' "$TMP/stderr"
check_exit "lost GPU in the table" 5 "$GPUCTL" status
check_grep "table says LOST" '^  2 NVIDIA H100 80GB HBM3 +LOST: GPU is lost$' "$TMP/stdout"
check_exit "lost GPU in csv" 5 "$GPUCTL" status --query-gpu=index,memory.used --format=csv,noheader
check_eq "csv row of the lost GPU" '2, [GPU is lost]' "$(sed -n 3p "$TMP/stdout")"

{ cat "$H"; } | awk '/^\[gpu\]/{g++} {print} /^\[gpu\]/ && g==2 {print "handle_error = NO_PERMISSION"}' >"$M"
check_exit "a GPU we may not open" 5 "$GPUCTL" status --json
cp "$TMP/stdout" "$TMP/out"
check_eq "shown with the reason" '[1,"Insufficient Permissions",null]' "$(jqv '.gpus[1] | [.index,.error,.uuid]')"
check_eq "count_v2 still counts it" 8 "$(jqv '.gpus | length')"

printf 'driver_version = 550.54.15\n' >"$M"
check_exit "a machine without GPUs" 0 "$GPUCTL" status
check_grep "says so" 'no NVIDIA GPUs found' "$TMP/stdout"
check_exit "JSON without GPUs" 0 "$GPUCTL" status --json
check_eq "empty gpus list" '[]' "$(jq -c .gpus "$TMP/stdout")"

use_machine "$H"
check_exit "no command" 2 "$GPUCTL"
check_exit "unknown command" 2 "$GPUCTL" frobnicate
check_grep "unknown command named" "unknown command 'frobnicate'" "$TMP/stderr"
check_exit "--help" 0 "$GPUCTL" --help
check_grep "--help documents exit codes" '^ +5  a GPU was lost' "$TMP/stdout"
check_exit "status --help" 0 "$GPUCTL" status --help
check_exit "unique prefix runs the command" 0 "$GPUCTL" stat --no-processes
check_exit "-l with junk" 2 "$GPUCTL" status -l 1x
check_exit "-l negative" 2 "$GPUCTL" status -l -1
check_exit "--count 0" 2 "$GPUCTL" status -c 0
check_exit "-i without value" 2 "$GPUCTL" status -i
check_grep "names the option" "option '-i' needs a value" "$TMP/stderr"

# Command names: typos, and the commands that end things, which are never abbreviated.
check_exit "a typo" 2 "$GPUCTL" staus
check_grep "gets the nearest command" 'unknown command .staus.\. Did you mean `gpuctl status`\?' "$TMP/stderr"
check_exit "kill is not reached by an abbreviation" 2 "$GPUCTL" kil --mine
check_grep "and says to type it in full" '`gpuctl kill` ends things, so it is never abbreviated' "$TMP/stderr"
check_exit "nor is release" 2 "$GPUCTL" rel
check_exit "a prefix shared with release is ambiguous, not run" 2 "$GPUCTL" r -- true
check_grep "and names both" "ambiguous command 'r', could be: run release" "$TMP/stderr"

# One GPU selection, resolved in one place: the same error and code for every command.
check_exit "status -i 9 on 8 GPUs" 6 "$GPUCTL" status -i 9
sed 's/^gpuctl status: //' "$TMP/stderr" >"$TMP/status.err"
check_exit "release --gpus 9: exit 6 too" 6 "$GPUCTL" release --gpus 9
check_eq "with the same message" "$(cat "$TMP/status.err")" "$(sed 's/^gpuctl release: //' "$TMP/stderr")"
check_exit "release --gpu, the older spelling" 6 "$GPUCTL" release --gpu 9
check_exit "kill --gpus 9" 6 "$GPUCTL" kill --gpus 9

# Usage errors and help do not depend on the driver.
use_machine "$H" /nonexistent/libnvidia-ml.so.1
check_exit "a bad value without a driver is still a usage error" 2 "$GPUCTL" status -l 1x
check_exit "--help-query-gpu needs no driver" 0 "$GPUCTL" status --help-query-gpu
