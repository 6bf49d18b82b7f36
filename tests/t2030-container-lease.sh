#!/usr/bin/env bash
# t2030-container-lease.sh: leases that follow a container (issue 28), with a real Docker Engine
# of the script's own (tests/lib/docker.sh) and the real docker client: `gpuctl run -- docker
# run` gives the container the lease's GPUs in docker's --gpus syntax (docker parses it and
# asks for exactly those devices: the container's NVIDIA_VISIBLE_DEVICES), a detached container
# holds the lease for its whole life (bound to its init process, checked by its cgroup), `leases`
# names the container, and the lease ends when the container stops; a command that names GPUs
# itself is refused. Review 2 follow-up: every container run gets the lease's variables (-e
# CUDA_VISIBLE_DEVICES=UUIDs, a memory share's GPUCTL_LEASE_MEM and framework limits), and words
# that give it every GPU's device node (--privileged, a /dev mount) are refused. Skipped where no
# dockerd can run (not root, no docker.io).
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/docker.sh"
plan 29
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
trap 'docker_stop; main_shell && finish_script' EXIT

# Without a dockerd: refused before any lease is asked for (not after waiting for it: -n 9 of
# 4 GPUs is refused for the container, not for the count), and a dry run shows the rewrite.
"$GPUCTL" run -q -n 9 --wait -- docker run -d --privileged img >/dev/null 2>"$TMP/e0"
check_eq "a refused container run is refused before its lease is asked for (2)" 2 $?
check_grep "by what it gives the container" "^gpuctl run: --privileged gives the container every host device" "$TMP/e0"
"$GPUCTL" run -q -n 1 --dry-run -- docker run --rm img nvidia-smi >"$TMP/dry" 2>&1
check_grep "a dry run shows the container run as rewritten (devices, -e, cidfile)" \
	"^would run: docker run --gpus '\"device=GPU-[^ ]*\"' -e CUDA_VISIBLE_DEVICES=GPU-[^ ]* .* --cidfile [^ ]* --rm img nvidia-smi with:\$" "$TMP/dry"

if ! docker_start; then
	skip "a detached container holds a lease" "$DOCKER_WHY" 26
	exit 0
fi
# Names asked of the daemon within a budget a loaded test machine does not cut short.
export GPUCTL_CONTAINER_TIMEOUT=2000

# Refused before anything runs: the lease chooses the GPUs.
"$GPUCTL" run -q -n 1 -- docker run -d --gpus all gpuctl-test-pause:1 /pause >"$TMP/o0" 2>"$TMP/e0"
check_eq "a docker run that names GPUs itself is refused (2)" 2 $?
check_grep "saying which flag to leave out" "names GPUs itself \\(--gpus all\\): .*; leave it out" "$TMP/e0"
# review 2 follow-up: every GPU's device node, whatever the lease: refused, saying the safe form
"$GPUCTL" run -q -n 1 -- docker run -d --privileged=true gpuctl-test-pause:1 /pause >"$TMP/o0" 2>"$TMP/e0"
check_eq "docker run --privileged is refused (2)" 2 $?
check_grep "saying what it gives and what to do" \
	"--privileged=true gives the container every host device: every GPU's device node, past the lease. Leave it out" "$TMP/e0"
"$GPUCTL" run -q -n 1 -- docker run -d -itv//dev/:/dev gpuctl-test-pause:1 /pause >"$TMP/o0" 2>"$TMP/e0"
check_eq "a bind mount of the host's /dev is refused (2)" 2 $?
check_eq "and nothing was started" "0 " "$(live_leases) $(docker ps -q)"

"$GPUCTL" run -n 2 --name ctrjob -- docker run -d --name gpujob gpuctl-test-pause:1 /pause \
	>"$TMP/out" 2>"$TMP/err"
check_eq "gpuctl run -- docker run -d: exit 0" 0 $?
id=$(tr -d '\n' <"$TMP/out")
check "docker printed the container's id" grep -Eq '^[0-9a-f]{64}$' "$TMP/out"
check_grep "the lease is said to be held by the container" "is held by container ${id:0:12} .* until it stops" "$TMP/err"
pid=$(docker_pid "$id")
"$GPUCTL" leases --json >"$TMP/out"
check_eq "one lease, bound to the container's init" "1 $pid" "$(jqv '[(.leases|length), .leases[0].bound_pid]' | tr -d '[]' | tr ',' ' ')"
check_eq "leases --json names the container" "\"$id\",\"gpujob\"" "$(jqv '.leases[0].container_id, .leases[0].container' | paste -sd,)"
uuids=$(jqv '[.leases[0].gpus[].uuid] | join(",")' | tr -d '"')
check_eq "docker gave the container exactly the lease's GPUs (--gpus \"device=UUID,UUID\")" \
	"NVIDIA_VISIBLE_DEVICES=$uuids" "$(tr '\0' '\n' </proc/$pid/environ | grep '^NVIDIA_VISIBLE_DEVICES=')"
check_eq "CUDA inside sees the lease's GPUs by UUID (-e CUDA_VISIBLE_DEVICES), whatever its nodes" \
	"CUDA_VISIBLE_DEVICES=$uuids GPUCTL_LEASE_NAME=ctrjob" \
	"$(tr '\0' '\n' </proc/$pid/environ | grep -E '^(CUDA_VISIBLE_DEVICES|GPUCTL_LEASE_NAME)=' | LC_ALL=C sort | paste -sd' ')"
"$GPUCTL" leases >"$TMP/table"
check_grep "leases shows the container as the holder" "held by docker container gpujob \\(${id:0:12}\\) until it stops" "$TMP/table"

# The client has exited long ago; the lease lives with the container, not with any shell.
check_eq "the lease outlives the client" 1 "$(live_leases)"
docker stop -t 1 gpujob >/dev/null
wait_leases 0
check_eq "the container stopped: its lease ended" 0 "$(live_leases)"

# A memory share's environment reaches its container (review 2 follow-up); the user's own
# --cidfile, with their own --device before it, is used (runctr_argv_free freed that value).
"$GPUCTL" run -q -n 1 --mem 1G -- docker run -d --device /dev/null:/dev/gpuctl-null \
	--cidfile "$TMP/my.cid" --name sharejob gpuctl-test-pause:1 /pause >"$TMP/out" 2>"$TMP/err"
check_eq "a share's container with the user's --device and --cidfile: exit 0" 0 $?
# (quiet: a bound lease says nothing; a bind that failed says why its lease was released)
check_eq "and its lease was bound, gpuctl said nothing" "" "$(grep '^gpuctl' "$TMP/err")"
check_eq "bound to it by the user's own cidfile" "$(docker_pid sharejob)" \
	"$("$GPUCTL" leases --json | jq '.leases[0].bound_pid')"
pid=$(docker_pid sharejob)
check_eq "the share's claim and limits are in the container's environment" \
	"GPUCTL_LEASE_MEM=1024 TF_FORCE_GPU_ALLOW_GROWTH=true XLA_PYTHON_CLIENT_PREALLOCATE=false" \
	"$(tr '\0' '\n' </proc/$pid/environ | grep -E '^(GPUCTL_LEASE_MEM|TF_FORCE_GPU_ALLOW_GROWTH|XLA_PYTHON_CLIENT_PREALLOCATE)=' | LC_ALL=C sort | paste -sd' ')"
docker rm -f sharejob >/dev/null 2>&1
wait_leases 0
check_eq "its lease ends with it" 0 "$(live_leases)"

# A foreground container's lease is its client's while both run, and ends with it.
"$GPUCTL" run -q -n 1 -- docker run --rm --name fg gpuctl-test-pause:1 /pause >/dev/null 2>"$TMP/fg.err" &
runner=$!
wait_for docker inspect fg
check_eq "a foreground docker run holds a lease while it runs" 1 "$(live_leases)"
docker rm -f fg >/dev/null 2>&1
wait $runner
wait_leases 0
check_eq "and it ends with the run" 0 "$(live_leases)"
check_eq "quietly: a container that ended is not an error" "" "$(cat "$TMP/fg.err")"

# A foreground container that outlives its client (the client killed): the lease follows it.
"$GPUCTL" run -q -n 1 -- docker run --name fg2 gpuctl-test-pause:1 /pause >/dev/null 2>"$TMP/fg2.err" &
runner=$!
wait_for sh -c '[ "$(docker inspect --format "{{.State.Running}}" fg2)" = true ]'
client=$(pgrep -P $runner docker)
kill -9 $client
wait $runner
check_eq "the client killed: the lease is bound to the container still running" \
	"1 $(docker_pid fg2)" "$(live_leases) $("$GPUCTL" leases --json | jq '.leases[0].bound_pid')"
docker rm -f fg2 >/dev/null 2>&1
wait_leases 0
check_eq "and ends when it stops" 0 "$(live_leases)"
