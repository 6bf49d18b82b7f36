#!/usr/bin/env bash
# bench/run.sh: `gpuctl status --json` on a simulated 16-GPU, 1000-process machine against the
# floor (bench/floor.c: the same NVML calls and /proc reads, printing nothing). Prints ratios and
# counts, not pass/fail: compare them between commits. Run with `make bench`.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-300}
tmp=$(mktemp -d)
sleepers=()
trap 'kill ${sleepers[*]} 2>/dev/null; rm -rf "$tmp"' EXIT
for i in $(seq 100); do "$B/sleeper" 2>/dev/null & sleepers+=($!); done 2>/dev/null || true
[ -x "$B/sleeper" ] || { for i in $(seq 100); do sleep 600 & sleepers+=($!); done; }
bash tests/gen-machine.sh "$tmp/m16" 16 1000 "${sleepers[@]}" "${sleepers[@]}" "${sleepers[@]}"
export FAKENVML_MACHINE=$tmp/m16 GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1

elapsed() { # elapsed CMD...: seconds for N runs
	local t0 t1
	t0=$(date +%s%N)
	for ((i = 0; i < N; i++)); do "$@" >/dev/null; done
	t1=$(date +%s%N)
	echo "scale=6; ($t1 - $t0) / 1000000000" | bc
}
"$B/gpuctl" status --json >/dev/null; "$B/bench-floor"   # warm caches
floor=$(elapsed "$B/bench-floor")
gpuctl=$(elapsed "$B/gpuctl" status --json)
table=$(elapsed "$B/gpuctl" status)
printf 'machine: 16 GPUs, 1000 processes (300 on live pids), %d runs each\n' "$N"
printf 'floor          %8.3f ms/run\n' "$(echo "$floor * 1000 / $N" | bc -l)"
printf 'status --json  %8.3f ms/run   ratio %.2f (target <= 1.5)\n' "$(echo "$gpuctl * 1000 / $N" | bc -l)" "$(echo "$gpuctl / $floor" | bc -l)"
printf 'status (table) %8.3f ms/run   ratio %.2f\n' "$(echo "$table * 1000 / $N" | bc -l)" "$(echo "$table / $floor" | bc -l)"

FAKENVML_STATS=$tmp/s1 "$B/gpuctl" status --json -c 1 >/dev/null
FAKENVML_STATS=$tmp/s3 "$B/gpuctl" status --json -l 0.01 -c 3 >/dev/null
c1=$(awk '/^calls /{print $2}' "$tmp/s1"); c3=$(awk '/^calls /{print $2}' "$tmp/s3")
printf 'NVML calls: %d for one run (open + 1 refresh); %d per further refresh (%.1f per GPU)\n' \
	"$c1" "$(((c3 - c1) / 2))" "$(echo "($c3 - $c1) / 2 / 16" | bc -l)"

bash tests/gen-machine.sh "$tmp/m8" 8 40 "${sleepers[@]}"
export FAKENVML_MACHINE=$tmp/m8
TIMEFORMAT='%R %U %S'
t=$( { time "$B/gpuctl" status -l 1 -c 6 >/dev/null; } 2>&1 )
read -r real user sys <<<"$t"
printf 'status -l 1 on 8 GPUs: %.3f%% of a core over %.1f s (target < 1%%)\n' "$(echo "($user + $sys) * 100 / $real" | bc -l)" "$real"
