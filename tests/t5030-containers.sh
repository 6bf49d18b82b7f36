#!/usr/bin/env bash
# t5030-containers.sh: every GPU process named with its container (issue 28), in status (table,
# JSON), doctor and the exporter (labels container, pod, namespace; valid under promtool). Two
# kinds of container: processes placed in real cgroups named as Docker and the kubelet name
# theirs (tests/fake/cgroup/containers has every layout; here the kernel writes the
# /proc/PID/cgroup that gpuctl reads), named by a stand-in Engine API on a unix socket
# (tests/helper/engine_standin.py: hostile names, a pod's labels, a runtime that hangs); and,
# where a real dockerd can run (tests/lib/docker.sh), a real container's process. Host pids that
# this /proc has not are said once, never shown as someone's.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/docker.sh"
. "$ROOT/tests/lib/daemon.sh"
plan 27
use_state
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
CG=
. "$ROOT/tests/lib/tmux.sh"
trap 'docker_stop; cg_cleanup; main_shell && { "${TM[@]}" kill-server 2>/dev/null; finish_script; }' EXIT

# gpu_proc PID GPU MIB: the stand-in NVML lists process PID on GPU.
gpu_proc() { printf '[process]\ngpu = %s\npid = %s\nused_memory_mib = %s\n' "$2" "$1" "$3" >"$FAKENVML_PROC_DIR/p$1"; }
# A cgroup hierarchy this script may make cgroups in: cgroup v2's (the unified one of a hybrid
# machine), else v1's pids.
cg_root() {
	local d
	for d in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/pids; do
		[ -w "$d/cgroup.procs" ] && { echo "$d"; return 0; }
	done
	return 1
}
CGDIRS=()
# cg_put PATH PID: PID moved into cgroup PATH (made, under the hierarchy's root).
cg_put() {
	mkdir -p "$CG$1" || return 1
	[[ " ${CGDIRS[*]} " == *" $1 "* ]] || CGDIRS+=("$1")
	echo "$2" >"$CG$1/cgroup.procs"
}
cg_cleanup() {
	local d i
	for ((i = ${#CGDIRS[@]} - 1; i >= 0; i--)); do
		d=${CGDIRS[i]}
		while read -r p; do echo "$p" >"$CG/cgroup.procs"; done <"$CG$d/cgroup.procs" 2>/dev/null
		rmdir "$CG$d" 2>/dev/null
		# the parents made for it, when empty: /docker, /kubepods/burstable/podUID
		rmdir -p --ignore-fail-on-non-empty "$(dirname "$CG$d")" 2>/dev/null
	done
	CGDIRS=()
}
# sleeper ARGV...: a process with that command line, its pid printed; it says it runs in $TMP/s.ARGV0.
wider() { sed 's/…/./g' "$2" | awk -v n="$1" 'length($0) > n'; }
sleeper() { (SLEEPER_READY=$TMP/s.$1 exec -a "$1" "$B/sleeper" "${@:2}") >/dev/null 2>&1 & echo $!; }

D=$(printf 'd%.0s' {1..4})$(head -c 30 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c 60)
K=$(printf 'e%.0s' {1..4})$(head -c 30 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c 60)
UID_POD=1ff47ee6-9685-4726-ac6f-0ff070c452d6
if [ "$(id -u)" = 0 ] && CG=$(cg_root) && cg_put "/docker/$D" $$ 2>/dev/null; then
	echo $$ >"$CG/cgroup.procs" # the script itself back out
	p1=$(sleeper python train.py --lr 3e-4)
	p2=$(sleeper python serve.py)
	await_count . "$TMP/s.python" 2
	cg_put "/docker/$D" "$p1"
	cg_put "/kubepods/burstable/pod$UID_POD/$K" "$p2"
	gpu_proc "$p1" 0 1000
	gpu_proc "$p2" 1 2000
	# A hostile name: quotes, a newline, a terminal escape; the pod's names from its labels.
	python3 - "$D" "$K" >"$TMP/containers.json" <<'PY'
import json, sys
print(json.dumps({sys.argv[1]: {"Name": '/evil"}\n\x1b[2J{x', "Pid": 1},
                  sys.argv[2]: {"Name": "/k8s_serve_web-0_prod_1ff47ee6_0",
                                "Labels": {"io.kubernetes.pod.name": "web-0",
                                           "io.kubernetes.pod.namespace": "prod",
                                           "io.kubernetes.container.name": "serve"}}}))
PY
	python3 "$ROOT/tests/helper/engine_standin.py" "$TMP/engine.sock" "$TMP/containers.json" --chunked &
	eng=$!
	wait_for test -S "$TMP/engine.sock"
	# A loaded test machine may take longer than the default 30 ms to run the stand-in's answer.
	export GPUCTL_CONTAINER_TIMEOUT=2000
	export DOCKER_HOST=unix://$TMP/engine.sock CONTAINER_HOST=unix://$TMP/none.sock
	"$GPUCTL" status --json >"$TMP/out"
	check_eq "the runtime is asked once per container" 2 "$(grep -c '^GET /containers/' "$TMP/engine.sock.log")"
	check_eq "a Docker container's process: its id from the kernel's cgroup" "\"$D\",\"docker\"" \
		"$(jqv ".gpus[0].processes[] | select(.pid == $p1) | .container_id, .runtime" | paste -sd,)"
	check_eq "its name from the Engine API (chunked), hostile text intact in JSON" \
		'"evil\"}\n\u001b[2J{x"' "$(jqv ".gpus[0].processes[] | select(.pid == $p1) | .container")"
	check_eq "a pod's container: pod uid from the cgroup, names from the runtime's labels" \
		"\"$K\",\"kubernetes\",\"$UID_POD\",\"web-0\",\"prod\",\"serve\"" \
		"$(jqv ".gpus[1].processes[] | select(.pid == $p2) | .container_id, .runtime, .pod_uid, .pod, .namespace, .container" | paste -sd,)"
	check_eq "its owner is still the kernel's" "\"$(id -un)\"" "$(jqv ".gpus[1].processes[0].user")"
	# A second user who may not ask the runtime (its socket is root's, 0755): the ids, which
	# the kernel shows everyone, but no names.
	if can_switch; then
		chmod 755 "$TMP"
		as_nobody env DOCKER_HOST="$DOCKER_HOST" GPUCTL_CONTAINER_TIMEOUT=2000 "$GPUCTL" status --json >"$TMP/nobody.json" 2>"$TMP/nobody.err"
		check_eq "another user who may not ask the runtime: ids, no names" "\"$D\",null" \
			"$(jq -c ".gpus[0].processes[] | select(.pid == $p1) | .container_id, .container" "$TMP/nobody.json" | paste -sd,)"
	else
		skip "as a second user" "needs root and setpriv"
	fi
	# Through the shared daemon's snapshot (no NVML here: only the snapshot can serve): the
	# containers are this caller's own reads, named with its own rights.
	daemon_setup
	daemon_start
	GPUCTL_NVML_LIBRARY=/nonexistent "$GPUCTL" status --json >"$TMP/snap.json" 2>"$TMP/snap.err"
	check_eq "via the daemon's snapshot: the same container keys" \
		"$(jq -c '[.gpus[].processes[] | [.pid, .container_id, .container, .pod, .namespace]]' "$TMP/out")" \
		"$(jq -c '[.gpus[].processes[] | [.pid, .container_id, .container, .pod, .namespace]]' "$TMP/snap.json")"
	daemon_stop
	unset GPUCTL_SOCKET
	"$GPUCTL" status >"$TMP/table"
	check_grep "the table prefixes the command with the container" '\[prod/web-0/serve\] python serve.py' "$TMP/table"
	check_eq "the hostile name is escaped on the terminal" 0 "$(grep -c $'\033' "$TMP/table")"
	COLUMNS=80 "$GPUCTL" status >"$TMP/t80"
	check_eq "at 80 columns the lines still fit" "" "$(wider 80 "$TMP/t80")"
	check_grep "shown escaped" '\[evil"}\\n\\e\[2J\{x\] python train.py' "$TMP/table"
	if command -v tmux >/dev/null; then
		"${TM[@]}" new-session -d -s top -x 120 -y 30 -e LC_ALL=C "$GPUCTL" top -d 0.5
		check "top prefixes the command with the container" await_screen top '\[prod/web-0/serve\] python serve\.py'
		"${TM[@]}" kill-server 2>/dev/null
	else
		skip "top" "tmux is not installed"
	fi
	start_exporter --cache-ms 0
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
	stop_exporter
	check_grep "exporter: container label, escaped" "^gpuctl_process_gpu_memory_bytes\{.*pid=\"$p1\".*container=\"evil\\\\\"}\\\\n" "$TMP/metrics"
	check_grep "exporter: pod and namespace labels" "^gpuctl_process_gpu_memory_bytes\{.*pid=\"$p2\".*container=\"serve\",pod=\"web-0\",namespace=\"prod\"\} 2097152000" "$TMP/metrics"
	if command -v promtool >/dev/null; then
		check "the exposition with container labels passes promtool" sh -c "promtool check metrics <'$TMP/metrics'"
	else
		skip "promtool" "the prometheus package is not installed"
	fi
	hp=$(sleeper holder)
	await_line . "$TMP/s.holder"
	"$GPUCTL" env -q -g 3 --hold-pid "$hp" >/dev/null # a lease: doctor then checks who holds none
	"$GPUCTL" doctor >"$TMP/doctor" 2>&1
	kill "$hp"
	check_grep "doctor names the container on a GPU it holds no lease for" "GPU 1 is used by kubernetes container prod/web-0/serve, which holds no lease" "$TMP/doctor"
	kill $eng; wait $eng 2>/dev/null

	# A runtime that accepts and never answers: status does not wait for it.
	python3 "$ROOT/tests/helper/engine_standin.py" "$TMP/hang.sock" "$TMP/containers.json" --hang &
	eng=$!
	wait_for test -S "$TMP/hang.sock"
	DOCKER_HOST=unix://$TMP/hang.sock GPUCTL_CONTAINER_TIMEOUT=30 timeout 20 "$GPUCTL" status --json >"$TMP/out"
	check_eq "a hung runtime: status answers, with the ids and no names" "0 \"$D\",null" \
		"$? $(jqv ".gpus[0].processes[0] | .container_id, .container" | paste -sd,)"
	kill $eng; wait $eng 2>/dev/null
	# An answer larger than any inspect (4 MiB): read up to its bound, then given up.
	python3 "$ROOT/tests/helper/engine_standin.py" "$TMP/huge.sock" "$TMP/containers.json" --huge &
	eng=$!
	wait_for test -S "$TMP/huge.sock"
	DOCKER_HOST=unix://$TMP/huge.sock timeout 20 "$GPUCTL" status --json >"$TMP/out"
	check_eq "a 4 MiB answer: status answers, the id and no name" "0 \"$D\",null" \
		"$? $(jqv ".gpus[0].processes[0] | .container_id, .container" | paste -sd,)"
	kill $eng; wait $eng 2>/dev/null
	unset DOCKER_HOST CONTAINER_HOST
	# No runtime at all: the ids still, and nothing is invented.
	DOCKER_HOST=unix://$TMP/absent.sock "$GPUCTL" status --json >"$TMP/out"
	check_eq "no runtime: the id, no name" "\"$D\",null" "$(jqv ".gpus[0].processes[0] | .container_id, .container" | paste -sd,)"
	kill "$p1" "$p2"; wait "$p1" "$p2" 2>/dev/null
	rm -f "$FAKENVML_PROC_DIR"/p*
	cg_cleanup
else
	skip "processes in cgroups named as the runtimes name theirs" "needs root and a writable cgroup hierarchy" 19
fi

# Processes NVML lists that this /proc has not (gpuctl in a container without the host's PID
# namespace): said once, no owner or container invented.
gpu_proc 3999901 2 100
gpu_proc 3999902 3 100
gen_machine "$TMP/gone" 4 2 3999901 3999902
use_machine "$TMP/gone"
"$GPUCTL" status >"$TMP/table"
check_eq "host pids not in this /proc: said once" 1 "$(grep -c "GPU processes is in this /proc" "$TMP/table")"
"$GPUCTL" status --json >"$TMP/out"
check_eq "JSON: processes_unmapped, and no user or container" "true null null" \
	"$(jqv '(.processes_unmapped | test("is in this /proc")), .gpus[0].processes[0].user, .gpus[0].processes[0].container_id' | paste -sd' ')"
"$GPUCTL" doctor >"$TMP/doctor" 2>&1
check_grep "doctor: host_pids_unmapped" "host_pids_unmapped" "$TMP/doctor"
use_machine "$TMP/m4"
rm -f "$FAKENVML_PROC_DIR"/p*

# A real container (a real dockerd, the real client): its process is named with it everywhere.
if docker_start; then
	export GPUCTL_CONTAINER_TIMEOUT=2000
	id=$(docker run -d --name realjob gpuctl-test-pause:1 /pause)
	pid=$(docker_pid "$id")
	gpu_proc "$pid" 2 3000
	"$GPUCTL" status --json >"$TMP/out"
	check_eq "a real Docker container's process: id, name, runtime" "\"$id\",\"realjob\",\"docker\"" \
		"$(jqv ".gpus[2].processes[] | select(.pid == $pid) | .container_id, .container, .runtime" | paste -sd,)"
	"$GPUCTL" status >"$TMP/table"
	check_grep "status shows it" '\[realjob\] /pause' "$TMP/table"
	start_exporter --cache-ms 0
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
	stop_exporter
	check_grep "the exporter labels it" "^gpuctl_process_gpu_memory_bytes\{.*pid=\"$pid\".*container=\"realjob\"" "$TMP/metrics"
	if command -v promtool >/dev/null; then
		check "and passes promtool" sh -c "promtool check metrics <'$TMP/metrics'"
	else
		skip "promtool" "the prometheus package is not installed"
	fi
	docker_stop
else
	skip "a real Docker container's process" "$DOCKER_WHY" 4
fi
# The machine's own numbers of processes: a container's, a process in none.
sl=$(sleeper plain)
await_line . "$TMP/s.plain"
gpu_proc "$sl" 0 10
"$GPUCTL" status --json >"$TMP/out"
check_eq "a process in no container has null container keys" "null,null,null" \
	"$(jqv ".gpus[0].processes[] | select(.pid == $sl) | .container_id, .container, .pod" | paste -sd,)"
kill "$sl"
