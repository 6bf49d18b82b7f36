#!/usr/bin/env bash
# bench/top.sh: what `gpuctl top` costs while it runs: on a simulated 16-GPU machine whose 1,000
# processes are real live processes (bench/spawn.c), top refreshing every second on an 80x24 and
# on a 200x50 terminal (tmux), each for SECONDS (default 30), its CPU time (user + system, from
# /proc/PID/stat) over the wall time, as a share of one core: the issue's target is under 2%.
# Then every 0.1 s, for the cost of one refresh, with the NVML calls it made per GPU (the
# stand-in counts them) and its /proc opens per process (strace, when installed): nothing is
# read twice in a refresh. bench/top.sh [SECONDS]; TOP_SECONDS works too.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "bench/top.sh: needs tmux" >&2; exit 1; }
secs=${1:-${TOP_SECONDS:-30}}

echo "== gpuctl top bench: $(machine_line)"
m=$tmp/m16
live_machine "$m" 16 1000
export FAKENVML_MACHINE=$m
TM=(tmux -S "$tmp/tmux.sock" -f /dev/null)
tm_cleanup() { "${TM[@]}" kill-server 2>/dev/null || true; bench_cleanup; }
trap tm_cleanup EXIT
"${TM[@]}" new-session -d -s base cat   # keeps the server up between the runs
hz=$(getconf CLK_TCK)

# cpu_ticks PID: its user + system time so far, in clock ticks.
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# start_top NAME COLS ROWS [VAR=VALUE...] -- ARGS...: top in a tmux session (which has the
# server's environment, and these variables); its pid in $tmp/NAME.pid once it has drawn its
# process table (the first refresh, cold caches, is not what is measured).
start_top() {
	local name=$1 x=$2 y=$3 t envs=(-e LC_ALL=C.UTF-8)
	shift 3
	while [ "$1" != "--" ]; do envs+=(-e "$1"); shift; done
	shift
	"${TM[@]}" new-session -d -s "$name" -x "$x" -y "$y" "${envs[@]}" \
		sh -c 'echo $$ >"$0"; exec "$@"' "$tmp/$name.pid" "$B/gpuctl" top "$@"
	for ((t = 0; t < 600; t++)); do
		"${TM[@]}" capture-pane -p -t "$name" | grep -q "1000 processes" && return 0
		sleep 0.05
	done
	echo "bench: top did not draw its table within 30 s" >&2
	exit 1
}

echo "16 GPUs x 1,000 live processes; CPU of top over ${secs} s after its first refresh"
for size in 80x24 200x50; do
	start_top "t$size" "${size%x*}" "${size#*x}" -- -d 1
	sleep 2   # two steady refreshes before the clock starts
	pid=$(cat "$tmp/t$size.pid")
	c0=$(cpu_ticks "$pid") w0=$(date +%s.%N)
	sleep "$secs"
	c1=$(cpu_ticks "$pid") w1=$(date +%s.%N)
	pct=$(calc "($c1 - $c0) / $hz / ($w1 - $w0) * 100")
	row "top -d 1 at $size: CPU, % of one core" "$pct% ($((c1 - c0)) ticks in $(calc "$w1 - $w0") s)" "< 2%" "$(le "$pct" 1.999)"
	"${TM[@]}" send-keys -t "t$size" q
done

# One refresh: at -d 0.1, the CPU per refresh; then what it reads (the stand-in counts the NVML
# calls; strace, when installed, the /proc calls over 3 s).
start_top fast 80 24 "FAKENVML_STATS=$tmp/stats" -- -d 0.1
sleep 1
pid=$(cat "$tmp/fast.pid")
c0=$(cpu_ticks "$pid") w0=$(date +%s.%N)
sleep $((secs / 3 > 5 ? secs / 3 : 5))
c1=$(cpu_ticks "$pid") w1=$(date +%s.%N)
row "top -d 0.1: CPU per refresh" "$(calc "($c1 - $c0) * 1000 / $hz / (($w1 - $w0) * 10)") ms" "-" "-"
if command -v strace >/dev/null; then
	timeout 3 strace -c -e trace=openat,newfstatat,read -p "$pid" -o "$tmp/strace" 2>/dev/null || true
fi
"${TM[@]}" send-keys -t fast q
for ((t = 0; t < 200; t++)); do [ -s "$tmp/stats" ] && break; sleep 0.05; done
refreshes=$(awk '$1 == "nvmlDeviceGetUtilizationRates" { print int($2 / 16) }' "$tmp/stats")
echo "  NVML calls per GPU and refresh, over $refreshes refreshes (the ones made at every refresh):"
awk -v n="$refreshes" '$1 ~ /^nvml/ && $2 / 16 / n > 0.5 { printf "    %-46s %.2f\n", $1, $2 / 16 / n }' \
	"$tmp/stats" | sort
if [ -s "$tmp/strace" ]; then
	echo "  /proc calls in 3 s (about 30 refreshes of 1,000 processes: each stat'ed once and its"
	echo "  stat file read once a refresh; command lines only when new or due again):"
	awk '$NF ~ /^(openat|newfstatat|read)$/ { printf "    %-12s %s\n", $NF, $4 }' "$tmp/strace"
fi
echo "top bench: $missed target(s) missed"
[ "$missed" -eq 0 ]
