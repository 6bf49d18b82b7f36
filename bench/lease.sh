#!/usr/bin/env bash
# bench/lease.sh: the cost of leasing, on simulated machines. Prints figures, not pass/fail:
#  - `gpuctl run -n 1 -- true` against plain `true` (8 GPUs): the time a lease adds;
#  - 32 waiters queued for 10 s: their CPU, in total;
#  - the time from a GPU's release to the next waiter's job starting.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-200}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export GPUCTL_STATE_DIR=$tmp/state FAKENVML_PROC_DIR=$tmp/procs GPUCTL_SYSTEM_CONFIG=$tmp/none XDG_CONFIG_HOME=$tmp
mkdir -p "$FAKENVML_PROC_DIR"
export GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1 FAKENVML_MACHINE=$PWD/tests/machines/h100x8.machine

ms() { echo "scale=3; $1 / 1000000" | bc; }
t0=$(date +%s%N); for ((i = 0; i < N; i++)); do true; done; t1=$(date +%s%N)
for ((i = 0; i < N; i++)); do /bin/true; done; t2=$(date +%s%N)
for ((i = 0; i < N; i++)); do "$B/gpuctl" run -n 1 -- /bin/true; done; t3=$(date +%s%N)
base=$(((t2 - t1) / N)); run=$(((t3 - t2) / N))
printf 'run -n 1 -- true: %s ms per run, plain true %s ms: %s ms added (target < 5)\n' \
	"$(ms $run)" "$(ms $base)" "$(ms $((run - base)))"

# An idle 4-GPU machine, all leased; 32 waiters queue behind.
bash tests/gen-machine.sh "$tmp/m4" 4 0
sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$tmp/m4"
export FAKENVML_MACHINE=$tmp/m4 FAKENVML_PROC_DIR=$tmp/procs4
mkdir -p "$FAKENVML_PROC_DIR"
"$B/gpuctl" run -n 4 -- sleep 13 &
sleep 0.3
pids=()
for i in $(seq 32); do "$B/gpuctl" run -n 1 --wait -- true 2>/dev/null & pids+=($!); done
sleep 1   # let them queue
ticks() { local s=0 p; for p in "${pids[@]}"; do s=$((s + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo $s; }
a=$(ticks); sleep 10; b=$(ticks)
hz=$(getconf CLK_TCK)
printf '32 waiters for 10 s: %s CPU ticks in total = %s%% of one core (target < 1%%)\n' $((b - a)) \
	"$(echo "scale=3; ($b - $a) * 100 / $hz / 10" | bc)"
kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null || true

# Release to start: a holder ends, the one waiter's job starts.
lat=()
for i in $(seq 10); do
	"$B/gpuctl" run -n 4 -- "$B/workload" --seconds 0.3 --log "$tmp/l$i" --tag h &
	sleep 0.1
	"$B/gpuctl" run -n 1 --wait -- "$B/workload" --seconds 0 --log "$tmp/l$i" --tag w
	wait
	lat+=($(awk '$1=="end" && $2=="h"{e=$3} $1=="start" && $2=="w"{s=$3} END{print int((s-e)/1000)}' "$tmp/l$i"))
done
sorted=($(printf '%s\n' "${lat[@]}" | sort -n))
printf 'release -> next job started: median %s ms, max %s ms over 10 (target < 50; includes the job process start)\n' \
	"$(echo "scale=1; ${sorted[5]} / 1000" | bc)" "$(echo "scale=1; ${sorted[9]} / 1000" | bc)"
