#!/usr/bin/env bash
# bench/jobs.sh: the cost of detached jobs, on a simulated idle 4-GPU machine with a shared
# daemon. Prints figures, not pass/fail:
#  - `gpuctl submit -- true` with the runner up, against plain /bin/true (target < 10 ms);
#  - 1,000 queued jobs (every GPU held by one running job): RSS of every process gpuctl keeps
#    for them, the daemon and the runner (target < 64 MiB in all), and their CPU over 5 idle
#    seconds (target 0);
#  - `gpuctl jobs` and `gpuctl jobs --json` with those 1,000 records (target < 20 ms).
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-1000}
tmp=$(mktemp -d)
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state XDG_RUNTIME_DIR=$tmp/run
export GPUCTL_STATE_DIR=$tmp/private GPUCTL_SOCKET=$tmp/gpuctl.sock GPUCTL_CONFIG_NOSYSTEM=1
export FAKENVML_PROC_DIR=$tmp/procs GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR" "$FAKENVML_PROC_DIR"
bash tests/fake/gen-machine.sh "$tmp/m4" 4 0
sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$tmp/m4"
export FAKENVML_MACHINE=$tmp/m4
G=$PWD/$B/gpuctl
"$G" daemon --socket "$GPUCTL_SOCKET" --state-dir "$tmp/dstate" --config /dev/null 2>"$tmp/daemon.log" &
daemon=$!
cleanup() {
	set +e
	timeout 60 "$G" cancel --all --grace 0 >/dev/null 2>&1
	kill "$daemon" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
until grep -qs serving "$tmp/daemon.log"; do sleep 0.05; done

# stats FILE: median, p99 and max of the numbers in FILE (microseconds) as milliseconds.
stats() {
	sort -n "$1" | awk '{v[NR] = $1} END {p = int(NR * 0.99); if (p < 1) p = 1
		printf "median %.2f ms, p99 %.2f ms, max %.2f ms", v[int((NR + 1) / 2)] / 1000, v[p] / 1000, v[NR] / 1000}'
}
us() { local s=${1/./}; echo $((10#$s)); }

hold=$("$G" submit -n 4 -- sleep 3600) # the runner starts (once) and every GPU is held
runner=$(sed -n 's/^gpuctl runner: pid \([0-9]*\) serving.*/\1/p' "$XDG_STATE_HOME"/gpuctl/jobs/*/runner.log | tail -1)
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
d0=$(ticks "$daemon"); r0=$(ticks "$runner")
for ((i = 0; i < 50; i++)); do t0=$EPOCHREALTIME; /bin/true; t1=$EPOCHREALTIME; echo $(($(us $t1) - $(us $t0))); done >"$tmp/true"
# The floor: starting gpuctl at all (exec, dynamic linking), doing nothing.
for ((i = 0; i < 50; i++)); do t0=$EPOCHREALTIME; "$G" --version >/dev/null; t1=$EPOCHREALTIME; echo $(($(us $t1) - $(us $t0))); done >"$tmp/version"
for ((i = 0; i < N; i++)); do
	t0=$EPOCHREALTIME
	"$G" submit -- true >/dev/null
	t1=$EPOCHREALTIME
	echo $(($(us $t1) - $(us $t0)))
done >"$tmp/submit"
head -100 "$tmp/submit" >"$tmp/first"; tail -100 "$tmp/submit" >"$tmp/last"
hz=$(getconf CLK_TCK)
printf 'submit (runner up, %d in a row): %s (target < 10 ms)\n' "$N" "$(stats "$tmp/submit")"
printf '  CPU per submit: daemon %.2f ms, runner %.2f ms\n' "$(echo "($(ticks "$daemon") - $d0) * 1000 / $hz / $N" | bc -l)" \
	"$(echo "($(ticks "$runner") - $r0) * 1000 / $hz / $N" | bc -l)"
printf '  the first 100: %s; the last 100: %s\n' "$(stats "$tmp/first")" "$(stats "$tmp/last")"
printf '  floors: gpuctl --version %s; /bin/true %s\n' "$(stats "$tmp/version")" "$(stats "$tmp/true")"

queued=$("$G" leases --json | jq '.queue | length')
rss() { awk '/^VmRSS/ {print $2}' /proc/"$1"/status; }
pss() { awk '/^Pss:/ {print $2}' /proc/"$1"/smaps_rollup; }
r1=$(rss "$daemon"); r2=$(rss "$runner")
printf '%s jobs queued: RSS daemon %.1f MiB + runner %.1f MiB = %.1f MiB (PSS %.1f MiB) (target < 64 MiB)\n' \
	"$queued" "$(echo "$r1 / 1024" | bc -l)" "$(echo "$r2 / 1024" | bc -l)" "$(echo "($r1 + $r2) / 1024" | bc -l)" \
	"$(echo "($(pss "$daemon") + $(pss "$runner")) / 1024" | bc -l)"
a=$(($(ticks "$daemon") + $(ticks "$runner"))); sleep 5; b=$(($(ticks "$daemon") + $(ticks "$runner")))
printf 'idle for 5 s with them queued: %d CPU ticks, daemon and runner together (target 0)\n' $((b - a))

for mode in "" --json; do
	for ((i = 0; i < 20; i++)); do
		t0=$EPOCHREALTIME; "$G" jobs $mode >/dev/null; t1=$EPOCHREALTIME
		echo $(($(us $t1) - $(us $t0)))
	done >"$tmp/jobs"
	printf 'jobs %-6s with %d records: %s (target < 20 ms)\n' "$mode" "$(ls "$XDG_STATE_HOME"/gpuctl/jobs/*/*.job | wc -l)" \
		"$(stats "$tmp/jobs")"
done
