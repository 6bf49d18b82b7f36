#!/usr/bin/env bash
# t2006-lease-hints.sh: what `run` says inside a shell that holds a lease from
# `eval "$(gpuctl env ...)"` (issue 11.3): the inherited CUDA_VISIBLE_DEVICES and the lease
# are named, and --wait is never suggested when waiting cannot help; and `env --format=docker`
# read by the real docker CLI (issue 11.8): its words get past docker's argument parsing, for
# one GPU and for several, and fail only for want of a daemon.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 15
use_machine "$MACHINES/h100x8.machine" # free: GPUs 1, 4 and 7
daemon_setup
daemon_start

# Inside the lease's shell: CUDA_VISIBLE_DEVICES=1 is the only GPU there is to choose from.
bash -c 'eval "$("$0" env -q -n 1 --prefer index)"; echo "$GPUCTL_LEASE_ID" >"$1.id"
	"$0" run -n 2 -- true 2>"$1.more"; echo "more $?" >>"$1"
	"$0" run -n 1 -- true 2>"$1.own"; echo "own $?" >>"$1"
	timeout 20 "$0" run -n 2 --wait -- true 2>"$1.wait"; echo "wait $?" >>"$1"' "$GPUCTL" "$TMP/in"
id=$(cat "$TMP/in.id")
check_eq "more GPUs than the lease's shell sees: a bad request (2)" "more 2" "$(grep '^more' "$TMP/in")"
check_grep "names the variable and the lease that restrict the choice" \
	"^gpuctl run: 2 GPUs wanted, but only 1 can be chosen here: CUDA_VISIBLE_DEVICES=1 from your lease $id restricts the choice" "$TMP/in.more"
check_eq "and does not suggest --wait" "" "$(grep -e '--wait' "$TMP/in.more")"
check_eq "the GPU its own lease holds: busy (10)" "own 10" "$(grep '^own' "$TMP/in")"
check_grep "says to use them directly" "CUDA_VISIBLE_DEVICES=1 from your lease $id restricts the choice to GPUs that lease holds: use them directly" "$TMP/in.own"
check_eq "and does not suggest --wait" "" "$(grep -e '--wait' "$TMP/in.own")"
check_eq "--wait for what can never come is refused at once, not queued" "wait 2" "$(grep '^wait' "$TMP/in")"

# docker run $(gpuctl env --format=docker) IMAGE: the words after command substitution and word
# splitting are what docker parses. No daemon (DOCKER_HOST names none): a correct --gpus gets as
# far as connecting to it.
if command -v docker >/dev/null; then
	export DOCKER_HOST=unix://$TMP/no-docker.sock DOCKER_CONFIG=$TMP/docker
	"$B/sleeper" & holdp=$!
	# docker_ok WORDS OUTPUT: gpuctl printed --gpus ... and docker got as far as its daemon.
	docker_ok() { [[ $1 == --gpus\ * ]] && grep -q 'Cannot connect to the Docker daemon' "$2"; }
	for how in "-n 1" "-n 2" "-n 2 --uuid"; do
		words=$("$GPUCTL" env -q $how --ignore-usage --hold-pid $holdp --format=docker)
		docker run $words debian:12 true >"$TMP/docker" 2>&1
		rc=$?
		check "docker parses '$words' ($how), then wants a daemon (exit $rc)" \
			docker_ok "$words" "$TMP/docker"
	done
	check_eq "three leases taken" 3 "$(live_leases)"
	# The check can fail: the old output, --gpus '"device=0"', is refused by docker's parser.
	old="--gpus '\"device=0\"'"
	docker run $old debian:12 true >"$TMP/dold" 2>&1
	check_grep "the old output fails docker's parsing (the test can fail)" 'invalid argument .* for "--gpus" flag' "$TMP/dold"
	kill $holdp
	wait $holdp 2>/dev/null
	wait_ended 4
	check_eq "the env leases end with the process they are bound to" 0 "$(live_leases)"
else
	skip "docker CLI" "no docker client installed (Debian: apt-get install docker.io)" 6
fi

# status colours a free GPU's low load green, never a leased one's (issue 11.17): GPU 7, idle,
# under an env lease with no process yet.
"$B/sleeper" & hp=$!
"$GPUCTL" env -q -g 7 --hold-pid $hp >/dev/null
"$GPUCTL" status --color=always -g 4,7 >"$TMP/c"
check_grep "a free GPU's low load is green (GPU 4)" $'^  4 .*\033\\[32m *0%' "$TMP/c"
check_eq "a leased GPU's is not (GPU 7)" "" "$(grep -a '^  7 ' "$TMP/c" | grep -a $'\033\\[32m')"
kill $hp
