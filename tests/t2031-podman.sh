#!/usr/bin/env bash
# t2031-podman.sh: containers with a real Podman of the script's own (issue 28,
# tests/lib/podman.sh): a podman container's GPU process is named through Podman's own Engine
# API socket; `gpuctl run -- podman run -d` gives it the lease's GPUs as CDI devices (podman
# resolves nvidia.com/gpu=UUID: the device's edit shows in the container's environment), binds
# the lease to the container (with the lease's variables: CUDA_VISIBLE_DEVICES and
# NVIDIA_VISIBLE_DEVICES by UUID), and the lease ends when it stops. Skipped where podman cannot run.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/podman.sh"
plan 9
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
trap 'podman_stop; main_shell && finish_script' EXIT
gpu_proc() { printf '[process]\ngpu = %s\npid = %s\nused_memory_mib = %s\n' "$2" "$1" "$3" >"$FAKENVML_PROC_DIR/p$1"; }

if ! podman_start; then
	skip "a real podman container" "$PODMAN_WHY" 9
	exit 0
fi
# gpuctl asks the service's socket; podman itself stays local (CONTAINER_HOST would make it a
# remote client, which takes none of the storage flags).
export GPUCTL_CONTAINER_TIMEOUT=2000 DOCKER_HOST=unix://$TMP/absent.sock
ask() { CONTAINER_HOST=unix://$TMP/pm/podman.sock "$GPUCTL" "$@"; }

id=$("${PODMAN[@]}" run -d "${PODMAN_RUN[@]}" --name pmjob gpuctl-test-pause:1 /pause)
pid=$("${PODMAN[@]}" inspect --format '{{.State.Pid}}' "$id")
gpu_proc "$pid" 1 1500
ask status --json >"$TMP/out"
check_eq "a real podman container's process: id, name (Podman's API), runtime" "\"$id\",\"pmjob\",\"podman\"" \
	"$(jqv ".gpus[1].processes[] | select(.pid == $pid) | .container_id, .container, .runtime" | paste -sd,)"
"${PODMAN[@]}" rm -f -t 0 pmjob >/dev/null
rm -f "$FAKENVML_PROC_DIR"/p*

podman_cdi
# what gives the container every GPU's device node is refused for podman too (review 2 follow-up)
"$GPUCTL" run -q -n 1 -- "${PODMAN[@]}" run -d "${PODMAN_RUN[@]}" --mount type=bind,src=/dev,dst=/dev \
	gpuctl-test-pause:1 /pause >/dev/null 2>"$TMP/e0"
check_eq "podman run with the host's /dev mounted: refused (2), saying so, nothing started" "2 1 0" \
	"$? $(grep -c "^gpuctl run: --mount gives the container the host's /dev" "$TMP/e0") $("${PODMAN[@]}" ps -aq | wc -l)"
"$GPUCTL" run -n 1 -- "${PODMAN[@]}" run -d "${PODMAN_RUN[@]}" --name leased gpuctl-test-pause:1 /pause \
	>"$TMP/out" 2>"$TMP/err"
check_eq "gpuctl run -- podman run -d: exit 0" 0 $?
id=$(tr -d '\n' <"$TMP/out")
check_grep "the lease is held by the container" "is held by container ${id:0:12} .* until it stops" "$TMP/err"
pid=$("${PODMAN[@]}" inspect --format '{{.State.Pid}}' "$id")
ask leases --json >"$TMP/out"
check_eq "leases names the podman container, bound to its init" "\"leased\",$pid" \
	"$(jqv '.leases[0].container, .leases[0].bound_pid' | paste -sd,)"
uuid=$(jqv '.leases[0].gpus[0].uuid' | tr -d '"')
check_eq "podman resolved the CDI device nvidia.com/gpu=UUID of the lease" "GPUCTL_CDI_GPU=$uuid" \
	"$(tr '\0' '\n' </proc/$pid/environ | grep '^GPUCTL_CDI_GPU=')"
check_eq "and its variables (-e): CUDA's and the NVIDIA runtime's, by UUID" \
	"CUDA_VISIBLE_DEVICES=$uuid NVIDIA_VISIBLE_DEVICES=$uuid" \
	"$(tr '\0' '\n' </proc/$pid/environ | grep -E '^(CUDA|NVIDIA)_VISIBLE_DEVICES=' | LC_ALL=C sort | paste -sd' ')"
check_eq "the lease outlives the client" 1 "$(live_leases)"
"${PODMAN[@]}" stop -t 1 leased >/dev/null 2>&1
wait_leases 0
check_eq "the container stopped: its lease ended" 0 "$(live_leases)"
