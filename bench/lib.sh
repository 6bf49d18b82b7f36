# bench/lib.sh: what the bench scripts share (sourced): a private temp dir cleaned up on any exit,
# simulated machines whose processes are real live processes, and the printing of each figure
# beside its target. Leases are off in every bench (the state directory does not exist), and no
# configuration file is read from the developer's home or /etc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=${B:-build}
tmp=$(mktemp -d)
spawner=
bench_cleanup() {
	# Only what this script started: the spawner kills and reaps its own children.
	if [ -n "$spawner" ]; then kill "$spawner" 2>/dev/null || true; wait "$spawner" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
export GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1 GPUCTL_SYSTEM_CONFIG=$tmp/none \
	XDG_CONFIG_HOME=$tmp/xdg GPUCTL_STATE_DIR=$tmp/no-leases
unset FAKENVML_PROC_DIR FAKENVML_STATS

# live_machine FILE NGPUS NPROCS: NPROCS live processes (bench/spawn.c), one per machine-file
# entry, on GPU I % NGPUS as their CUDA_VISIBLE_DEVICES says. Replaces the previous set.
live_machine() {
	local file=$1 ngpus=$2 nprocs=$3 t
	stop_live
	rm -f "$tmp/pids"
	"$B/bench-spawn" "$PWD/$B/sleeper" "$nprocs" "$ngpus" "$tmp/pids" & spawner=$!
	for ((t = 0; t < 1200; t++)); do
		[ -e "$tmp/pids" ] && break
		kill -0 "$spawner" 2>/dev/null || { echo "bench: could not start $nprocs processes" >&2; exit 1; }
		sleep 0.05
	done
	[ -e "$tmp/pids" ] || { echo "bench: $nprocs processes did not start within 60 s" >&2; exit 1; }
	mapfile -t live <"$tmp/pids"
	bash tests/fake/gen-machine.sh "$file" "$ngpus" "$nprocs" "${live[@]}"
}
stop_live() {
	if [ -n "$spawner" ]; then kill "$spawner" 2>/dev/null || true; wait "$spawner" 2>/dev/null || true; fi
	spawner=
}

# measure [bench-measure options] NAME CMD... [-- NAME CMD...]: fills M_wall[NAME], M_cpu[NAME],
# M_rss[NAME], M_flt[NAME], M_exit[NAME] with medians, and for each -r NAME:BASE R_cpu[NAME],
# R_wall[NAME], R_rss[NAME] with the medians of the per-round ratios to BASE, and R_ci[NAME] the
# CPU ratio's 95% bounds ("LOW-HIGH", bench/measure.c).
declare -A M_wall M_cpu M_rss M_flt M_exit R_cpu R_wall R_rss R_ci
measure() {
	local name wall cpu rss flt rc lo hi
	while read -r name wall cpu rss flt rc lo hi; do
		if [ "$name" = ratio ]; then
			# "ratio NAME BASE cpu wall rss cpu_low cpu_high"
			R_cpu[$wall]=$rss R_wall[$wall]=$flt R_rss[$wall]=$rc R_ci[$wall]="$lo-$hi"
			continue
		fi
		M_wall[$name]=$wall M_cpu[$name]=$cpu M_rss[$name]=$rss M_flt[$name]=$flt M_exit[$name]=$rc
	done < <("$B/bench-measure" "$@")
}

missed=0
# row LABEL FIGURE TARGET OK: one figure beside its target; OK is 1, 0, or - (no target).
row() {
	local verdict=
	case $4 in 1) verdict=ok ;; 0) verdict=over; missed=$((missed + 1)) ;; esac
	printf '  %-46s %-26s %-14s %s\n' "$1" "$2" "${3:+target $3}" "$verdict"
}
# calc EXPR: floating point arithmetic (awk), printed with up to 3 decimals.
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
# median [-d DECIMALS] NUMBER...: their median (3 decimals unless said), "nan"s left out; n/a
# when none is left.
median() {
	local d=3
	if [ "$1" = -d ]; then d=$2; shift 2; fi
	printf '%s\n' "$@" | grep -v nan | sort -g | awk -v d="$d" '{v[NR] = $1}
		END {if (!NR) {printf "n/a"; exit} printf "%." d "f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
# le A B: 1 when A <= B.
le() { awk "BEGIN { print ($1 <= $2) ? 1 : 0 }"; }

machine_line() {
	local cpu
	cpu=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)
	printf '%s, %s cores, %s GiB, Linux %s\n' "${cpu:-unknown CPU}" "$(nproc)" \
		"$(awk '/MemTotal/{printf "%d", $2 / 1048576 + 0.5}' /proc/meminfo)" "$(uname -r)"
}
