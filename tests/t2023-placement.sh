#!/usr/bin/env bash
# t2023-placement.sh: topology-aware picks, --bind-cpus and preferred GPUs (issue 26), with a
# daemon of the script's own on the simulated 2-socket PCIe box (pcie-2socket.machine: GPUs in
# NVLink-bridged pairs behind one PCIe switch each, two switches per socket) and the 8-GPU
# NVSwitch box:
# - `-n 2` gets a pair on one switch, `-n 4` one socket's four; with one GPU of each pair busy
#   the pick and the reason change (no NVLink, PCIe NODE, still one NUMA node);
# - a 1-GPU job does not break up the only free NVLinked pair when another GPU is free (and does
#   with --prefer index, which names the old order);
# - --bind-cpus: the job's Cpus_allowed_list is its GPUs' local CPUs, intersected with the CPUs
#   the caller may use (the simulated sets are made from this machine's own CPUs: a 2-core CI
#   runner still shows a real narrowing), for run and submit; said when it narrows nothing or
#   none is allowed; GPUCTL_NUMA_NODE;
# - [daemon] preferred_gpus.@GROUP: the order is followed, then spills over; `gpuctl config`
#   shows it; a list naming no GPU of the machine stops the daemon.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
plan 33

# The CPUs this script may use: the simulated GPU 0 is local to the last of them only, GPU 2 to
# the first and the last, so that binding narrows on any machine with two CPUs or more.
allowed=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
cpus=($(python3 -c "import os; print(' '.join(map(str, sorted(os.sched_getaffinity(0)))))"))
last=${cpus[${#cpus[@]} - 1]} first=${cpus[0]}
awk -v g0="$last" -v g2="$first,$last" '
	/^\[gpu\]/ {n++}
	/^cpu_affinity/ && n == 1 {print "cpu_affinity = " g0; next}
	/^cpu_affinity/ && n == 3 {print "cpu_affinity = " g2; next}
	{print}' "$MACHINES/pcie-2socket.machine" >"$TMP/box.machine"
use_machine "$TMP/box.machine"
daemon_setup
daemon_start

picked() { sed -n 's/^would lease://p' "$TMP/out" | grep -o 'GPU [0-9]*' | awk '{print $2}' | paste -sd, -; }
why() { sed -n 's/^why: //p' "$TMP/out"; }
dry() { "$GPUCTL" run --dry-run "$@" -- true >"$TMP/out" 2>"$TMP/err"; }

dry -n 2
check_eq "-n 2: two GPUs on one PCIe switch" "0,1" "$(picked)"
check_grep "its reason: NVLink, PIX, one NUMA node" '^why: GPUs 0,1: NV12 or more between every two, PCIe PIX at the farthest, NUMA node 0;' "$TMP/out"
dry -n 4
check_eq "-n 4: one socket's four" "0,1,2,3" "$(picked)"
check_grep "its reason: NODE at the farthest, one NUMA node" 'GPUs 0,1,2,3: NVLinked pairs 0-1 2-3, PCIe NODE at the farthest, NUMA node 0;' "$TMP/out"
dry -n 2 --prefer index
check_grep "--prefer index names the order" '^why: GPUs 0,1 \(order: index\)$' "$TMP/out"

# hold LIST: a lease on those GPUs, held by a sleeper until release_all.
HOLDS=()
hold() {
	local n
	n=$(count_lines "$SLEEPER_READY" '^[0-9]+$')
	"$GPUCTL" run -q -g "$1" -- "$B/sleeper" &
	HOLDS+=($!)
	await_count '^[0-9]+$' "$SLEEPER_READY" $((n + 1))
}
release_all() {
	local n p
	n=$(count_lines "$DLOG" 'lease [0-9a-f]+ ended')
	for p in "${HOLDS[@]}"; do kill "$p"; wait "$p" 2>/dev/null; done
	await_count 'lease [0-9a-f]+ ended' "$DLOG" $((n + ${#HOLDS[@]}))
	HOLDS=()
}

# One GPU of each pair busy.
hold 1; hold 3; hold 5; hold 7
dry -n 2
check_eq "one of each pair busy: -n 2 takes two on one socket" "0,2" "$(picked)"
check_grep "and says there is no NVLink between them" '^why: GPUs 0,2: no NVLink between them, PCIe NODE at the farthest, NUMA node 0 ' "$TMP/out"
dry -n 4
check_eq "one of each pair busy: -n 4 spans the sockets" "0,2,4,6" "$(picked)"
check_grep "and says so" 'PCIe SYS at the farthest, NUMA nodes 0,1' "$TMP/out"
release_all

# Only one NVLinked pair free (0-1), and GPU 7 alone (its pair's other GPU busy).
hold 2,3; hold 4,5; hold 6
dry -n 1
check_eq "a 1-GPU job takes the lone GPU, not one of the free NVLinked pair" "7" "$(picked)"
check_grep "and says what it kept" '^why: GPU 7: NUMA node 1; leaves the NVLinked pair 0-1 free ' "$TMP/out"
"$GPUCTL" run -n 1 -- true 2>"$TMP/err"
check_grep "the grant says why too" '^gpuctl run: GPU 7: NUMA node 1; leaves the NVLinked pair 0-1 free \(order: topology\)$' "$TMP/err"
dry -n 1 --prefer index
check_eq "--prefer index: the lowest index (the old order)" "0" "$(picked)"
dry -n 2
check_eq "the pair goes to a 2-GPU request" "0,1" "$(picked)"
release_all

# --bind-cpus: CPUs local to the GPUs, of those this process may use.
"$GPUCTL" run --bind-cpus -g 0 -- sh -c 'grep ^Cpus_allowed_list /proc/self/status; echo "numa=$GPUCTL_NUMA_NODE"' >"$TMP/out" 2>"$TMP/err"
check_eq "run --bind-cpus: Cpus_allowed_list is GPU 0's local CPUs" "$last" "$(awk '/^Cpus_allowed_list/ {print $2}' "$TMP/out")"
check_grep "the job is told its NUMA node" '^numa=0$' "$TMP/out"
if [ "$first" != "$last" ]; then
	check_grep "run says what it bound" "^gpuctl run: bound to CPUs $last \\(local to GPU 0; NUMA node 0\\)\$" "$TMP/err"
else
	skip "run says what it bound" "one CPU: nothing can be narrowed here"
fi
"$GPUCTL" run --bind-cpus -g 0,2 -- grep ^Cpus_allowed_list /proc/self/status >"$TMP/out" 2>"$TMP/err"
want=$(python3 -c "
s = {$first, $last}
print(','.join(map(str, sorted(s))) if len(s) < 2 or $last != $first + 1 else '$first-$last')")
check_eq "two GPUs: the union of their local CPUs" "$want" "$(awk '{print $2}' "$TMP/out")"
"$GPUCTL" run --bind-cpus -g 1 -- grep ^Cpus_allowed_list /proc/self/status >"$TMP/out" 2>"$TMP/err"
want=$(python3 -c "
import os
s = sorted(c for c in os.sched_getaffinity(0) if c < 16 or 32 <= c < 48)
print(s)")
got=$(python3 -c "
import sys
t = '$(awk '{print $2}' "$TMP/out")'
s = []
for part in t.split(','):
    a, _, b = part.partition('-')
    s += range(int(a), int(b or a) + 1)
print(sorted(s))")
check_eq "a GPU whose CPUs are 0-15,32-47: their intersection with those allowed" "$want" "$got"
if [ "$want" = "$(python3 -c 'import os; print(sorted(os.sched_getaffinity(0)))')" ]; then
	check_grep "and it says it narrows nothing" "every CPU you may use \\($allowed\\) is local to GPU 1 \\(0-15,32-47\\): nothing to narrow" "$TMP/err"
else
	check_grep "and it says what it bound" "^gpuctl run: bound to CPUs" "$TMP/err"
fi
if [ "$first" != "$last" ]; then
	taskset -c "$first" "$GPUCTL" run --bind-cpus -g 0 -- grep ^Cpus_allowed_list /proc/self/status >"$TMP/out" 2>"$TMP/err"
	check_grep "none of the GPU's CPUs allowed: said, and the job runs unbound" "none of GPU 0's local CPUs \\($last\\) is among those you may use \\($first\\); the job runs unbound" "$TMP/err"
else
	skip "none of the GPU's CPUs allowed" "one CPU"
fi
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
printf '[defaults]\nbind_cpus = true\n' >"$XDG_CONFIG_HOME/gpuctl/config"
out=$("$GPUCTL" run -q -g 0 -- grep ^Cpus_allowed_list /proc/self/status | awk '{print $2}')
check_eq "[defaults] bind_cpus = true binds without the option" "$last" "$out"
out=$("$GPUCTL" run -q --no-bind-cpus -g 0 -- grep ^Cpus_allowed_list /proc/self/status | awk '{print $2}')
check_eq "--no-bind-cpus undoes it" "$allowed" "$out"
rm -f "$XDG_CONFIG_HOME/gpuctl/config"
id=$("$GPUCTL" submit --bind-cpus -g 0 -- grep ^Cpus_allowed_list /proc/self/status)
await_ended "$id"
check_grep "submit --bind-cpus: the job's Cpus_allowed_list" "^Cpus_allowed_list:	$last\$" "$(jobs_dir)/$id.log"

# Preferred GPUs of a group: followed in order, then spilling over.
daemon_stop
grp=$(id -gn)
printf '[daemon]\npreferred_gpus.@%s = 6, 7, 4\nprefer = index\n' "$grp" >"$TMP/daemon.conf"
daemon_start
dry -n 1
check_grep "the group's first preferred GPU" "^why: GPU 6: preferred GPUs of group $grp \\(order: index\\)\$" "$TMP/out"
hold 6
dry -n 1
check_eq "then its second" "7" "$(picked)"
if can_switch; then   # another user, in no such group: no preferred list, the order alone
	as_nobody "$GPUCTL" run --dry-run -n 1 -- true >"$TMP/nb" 2>&1
	check_grep "a user outside the group gets no preference" '^why: GPU 0 \(order: index\)$' "$TMP/nb"
else
	skip "a user outside the group" "needs root and setpriv to act as a second user"
fi
hold 7; hold 4
dry -n 2
check_grep "spilling over when they are taken" "^why: GPUs 0,1: 2 of 2 outside the preferred GPUs of group $grp \\(they are not free\\)" "$TMP/out"
release_all
env -u GPUCTL_CONFIG_NOSYSTEM GPUCTL_SYSTEM_CONFIG="$TMP/daemon.conf" "$GPUCTL" config >"$TMP/out" 2>&1
check_grep "gpuctl config shows the preferred GPUs" "^file:$TMP/daemon.conf:2	daemon.preferred_gpus.@$grp=6, 7, 4\$" "$TMP/out"
daemon_stop

# A machine whose driver gives no topology (h100x8) is placed as before: by free memory.
use_machine "$MACHINES/h100x8.machine"
: >"$TMP/daemon.conf"
daemon_start
dry -n 2 --prefer free-memory
want=$(picked)
dry -n 2
check_eq "no topology: the default pick is free memory's (GPUs $want), as before" "$want $want" \
	"$(picked) $(python3 -c "print(','.join(sorted('$want'.split(','), key=int)))")"
check_grep "and nothing is said of a topology the driver did not give" '^why: GPUs [0-9],[0-9] \(order: topology\)$' "$TMP/out"
daemon_stop
printf '[daemon]\npreferred_gpus.alice = 9\n' >"$TMP/daemon.conf"
check_exit "a preferred list naming no GPU here stops the daemon" 2 "$GPUCTL" daemon --socket "$TMP/x.sock" \
	--state-dir "$TMP/xstate" --config "$TMP/daemon.conf"
check_grep "saying which" 'preferred_gpus.alice: no GPU with index 9' "$TMP/stderr"
