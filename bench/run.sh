#!/usr/bin/env bash
# bench/run.sh: gpuctl's one-shot commands, loops and start-up against bench/floor.c (the NVML
# calls and /proc reads each command needs, once each, printing nothing) on simulated machines whose processes are real
# live processes (bench/spawn.c): 16 GPUs x 1,000 and 64 GPUs x 10,000. Runs are spaced as a
# person's (bench/measure.c) and figures are medians; each is printed beside its target. Ratios
# are of CPU time (user + system), the wall-time ratio beside them (see bench/measure.c).
# Last, `gpuctl kill --grace 0.5` of a process that ignores SIGTERM: how long past its grace
# period kill takes (t0009 checks that SIGKILL never comes before it).
# ROUNDS, ROUNDS_BIG, ROUNDS_LOOP, ROUNDS_STARTUP override the numbers of rounds.
. "$(dirname "$0")/lib.sh"

echo "== gpuctl bench: $(machine_line)"
echo "   no lease daemon, no configuration file; interleaved rounds 100-300 ms apart; medians of per-round ratios of CPU time,"
echo "   [in brackets] the bounds of that median at 95% confidence (bench/measure.c)"
# On a Slurm node (slurmd's cgroup directories exist: also after the Slurm tests left them) status
# and doctor read each process's cgroup file for its job, and so does the floor: said, not hidden.
if compgen -G '/sys/fs/cgroup/*/slurm*' >/dev/null || [ -e /sys/fs/cgroup/system.slice/slurmstepd.scope ]; then
	echo "   a Slurm node: status, doctor and their floors read /proc/PID/cgroup too"
fi
# On a machine with a container runtime (src/machine/container.c's marks) they read it for each
# process's container: said likewise.
ctr_host=${DOCKER_HOST:-}${CONTAINER_HOST:-}
for p in /run/docker.sock /var/lib/docker /run/containerd /var/lib/containerd /run/podman \
	/var/lib/containers /run/crio /var/lib/kubelet /run/libpod /run/user/*/libpod \
	/run/user/*/containers /run/user/*/docker.sock; do
	if [ -e "$p" ]; then ctr_host=1; fi
done
if [ -n "$ctr_host" ]; then
	echo "   a container host: status, doctor and their floors read /proc/PID/cgroup too (each process's container)"
fi

# ---- start-up ----
measure -n "${ROUNDS_STARTUP:-101}" -g 5:20 empty "$B/bench-empty" -- version "$B/gpuctl" --version
d=$(calc "${M_wall[version]} - ${M_wall[empty]}")
echo "start-up"
row "gpuctl --version - empty C program" "$d ms (${M_wall[version]} vs ${M_wall[empty]})" "<= 0.3 ms" "$(le "$d" 0.3)"

# one_shot LABEL ROUNDS: the four status forms and doctor against their floors on $m. Each ratio
# is the median of the per-round ratios (bench/measure.c -r): a command and its floor run in the
# same round, so the machine's slow minutes (other builds on the 2 cores) cancel out.
one_shot() {
	local label=$1 rounds=$2 r k
	export FAKENVML_MACHINE=$m
	measure -n "$rounds" -r json:floor -r table:floor -r qgpu:floor_gpu -r qapps:floor_apps -r doctor:floor_doctor \
		floor "$B/bench-floor" status -- json "$B/gpuctl" status --json -- table "$B/gpuctl" status \
		-- floor_gpu "$B/bench-floor" gpu \
		-- qgpu "$B/gpuctl" status --query-gpu=index,name,uuid,memory.used,memory.total,utilization.gpu,temperature.gpu,power.draw --format=csv \
		-- floor_apps "$B/bench-floor" apps \
		-- qapps "$B/gpuctl" status --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv \
		-- floor_doctor "$B/bench-floor" doctor -- doctor "$B/gpuctl" doctor
	echo "$label; floor CPU (wall) ms: status ${M_cpu[floor]} (${M_wall[floor]}), gpu ${M_cpu[floor_gpu]} (${M_wall[floor_gpu]}), apps ${M_cpu[floor_apps]} (${M_wall[floor_apps]}), doctor ${M_cpu[floor_doctor]} (${M_wall[floor_doctor]})"
	for k in json:floor table:floor qgpu:floor_gpu qapps:floor_apps doctor:floor_doctor; do
		local c=${k%%:*} f=${k#*:} target=1.05 name
		name="status $c"
		if [ "$c" = doctor ]; then target=1.3 name=doctor; fi
		r=${R_cpu[$c]}
		row "$name: CPU / floor [95%] (wall / floor)" "$r [${R_ci[$c]}] (${R_wall[$c]}; ${M_cpu[$c]} ms)" "<= $target" "$(le "$r" $target)"
		if [ "$c" = doctor ]; then continue; fi
		r=${R_rss[$c]}
		row "$name: peak RSS / floor" "$r ($((M_rss[$c])) / $((M_rss[$f])) KiB)" "<= 1.5" "$(le "$r" 1.5)"
	done
}

# loop LABEL COUNT CHECK: `status -l 0.1` for COUNT refreshes, less a single run: CPU per refresh.
# CHECK is cpu (<= 3 ms per refresh) or rate (10 Hz kept: the pace of the frames after the
# first two as they reach a reader, bench/pace.c, the median of as many runs; the run's wall time
# less a one-shot's, beside it, holds the first refresh's variation).
loop() {
	local label=$1 n=$2 check=$3 cpu rate paces=() k
	measure -n "${ROUNDS_LOOP:-3}" -g 100:300 one "$B/gpuctl" status -c 1 -- many "$B/gpuctl" status -l 0.1 -c "$n"
	cpu=$(calc "(${M_cpu[many]} - ${M_cpu[one]}) / ($n - 1)")
	rate=$(calc "($n - 1) / ((${M_wall[many]} - ${M_wall[one]}) / 1000)")
	if [ "$check" = cpu ]; then
		row "$label: status -l 0.1, CPU per refresh" "$cpu ms ($rate Hz)" "<= 3 ms" "$(le "$cpu" 3)"
		return
	fi
	for ((k = 0; k < ${ROUNDS_LOOP:-3}; k++)); do
		sleep 0.$((RANDOM % 3 + 1))
		paces+=("$("$B/bench-pace" "driver " "$B/gpuctl" status -l 0.1 -c "$n" | awk '{ print $3 }')")
	done
	local pace
	pace=$(median "${paces[@]}")
	row "$label: status -l 0.1, rate kept" "$pace Hz (runs: ${paces[*]}; whole run $rate Hz; $cpu ms CPU per refresh)" \
		">= 9.9 Hz" "$(le 9.9 "$pace")"
}

m=$tmp/m16
live_machine "$m" 16 1000
one_shot "16 GPUs x 1,000 live processes" "${ROUNDS:-31}"
loop "1,000 live" 51 cpu
FAKENVML_STATS=$tmp/s1 "$B/gpuctl" status --json -c 1 >/dev/null
FAKENVML_STATS=$tmp/s3 "$B/gpuctl" status --json -l 0.01 -c 3 >/dev/null
c1=$(awk '/^calls /{print $2}' "$tmp/s1"); c3=$(awk '/^calls /{print $2}' "$tmp/s3")
row "NVML calls per further refresh, per GPU" "$(calc "($c3 - $c1) / 2 / 16")" "" -

m=$tmp/m64
live_machine "$m" 64 10000
one_shot "64 GPUs x 10,000 live processes" "${ROUNDS_BIG:-15}"
loop "10,000 live" 31 rate
stop_live

# The idle case: a small machine watched for a while.
live_machine "$tmp/m8" 8 40
export FAKENVML_MACHINE=$tmp/m8
TIMEFORMAT='%R %U %S'
t=$( { time "$B/gpuctl" status -l 1 -c 6 >/dev/null; } 2>&1 )
read -r real user sys <<<"$t"
pct=$(calc "($user + $sys) * 100 / $real")
row "8 GPUs x 40: status -l 1, share of a core" "$pct %" "< 1 %" "$(le "$pct" 0.99)"
stop_live

# kill's grace period: tests/helper/workload ignoring SIGTERM, on an idle 1-GPU machine; the wall
# time of `kill --pid PID --grace 0.5` less the 0.5 s (SIGTERM, the grace, SIGKILL, the end).
export FAKENVML_PROC_DIR=$tmp/procs WORKLOAD_READY=$tmp/ready
mkdir -p "$FAKENVML_PROC_DIR"
bash tests/fake/gen-machine.sh "$tmp/k1" 1 0
sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$tmp/k1"
export FAKENVML_MACHINE=$tmp/k1
: >"$tmp/kill"
# The loop's stderr is dropped: the shell reports each SIGKILLed workload there ("Killed").
exec 3>&2
for ((r = 0; r < 11; r++)); do
	: >"$WORKLOAD_READY"
	CUDA_VISIBLE_DEVICES=0 "$B/workload" --ignore-term 1 & wl=$!
	for ((i = 0; i < 1200; i++)); do grep -q "^ready $wl\$" "$WORKLOAD_READY" && break; sleep 0.05; done
	t0=$(date +%s%N)
	"$B/gpuctl" kill --pid "$wl" --grace 0.5 >/dev/null 2>&1 || { echo "bench: kill --pid $wl failed" >&3; exit 1; }
	t1=$(date +%s%N)
	wait "$wl" 2>/dev/null || true
	calc "($t1 - $t0) / 1e6 - 500" >>"$tmp/kill"
	echo >>"$tmp/kill"
done 2>/dev/null
exec 3>&-
over=$(sort -n "$tmp/kill" | sed -n 6p)
row "kill --grace 0.5, TERM ignored: past the grace" "$over ms (median of 11; max $(sort -n "$tmp/kill" | tail -1))" \
	"<= 50 ms" "$(le "$over" 50)"
unset FAKENVML_PROC_DIR WORKLOAD_READY
echo "run.sh: $missed target(s) missed"
