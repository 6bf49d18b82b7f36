#!/usr/bin/env bash
# tools/stress.sh [RUNS] [BUSY_LOOPS]: the suite's proof of determinism (`make stress`). Runs the
# whole suite (built already: `make test` first, or GPUCTL_BUILD=build-asan after `make asan`)
# RUNS times (default 10) while BUSY_LOOPS shell loops (default 2: both cores of the reference
# 2-core machine) spin, and reports each run's counts and wall time, every check that failed, and
# a summary. Exit 1 if any run failed.
set -u
cd "$(dirname "$0")/.."
runs=${1:-10} hogs=${2:-2}
export GPUCTL_BUILD=${GPUCTL_BUILD:-build}
out=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-stress.XXXXXX")
hog_pids=()
for ((i = 0; i < hogs; i++)); do
	sh -c 'while :; do :; done' &
	hog_pids+=($!)
done
trap 'kill "${hog_pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
sleep 1 # let the loops spin up: the runs are to start on a loaded machine
bad=0 walls=()
for i in $(seq "$runs"); do
	start=$(date +%s%N)
	tests/run.sh >"$out/run$i.log" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	walls+=("$ms")
	load=$(cut -d' ' -f1 /proc/loadavg)
	printf 'run %2d: %-40s %6.2f s  load %s\n' "$i" "$(tail -1 "$out/run$i.log")" "$(echo "$ms / 1000" | bc -l)" "$load"
	if [ "$rc" -ne 0 ]; then
		bad=$((bad + 1))
		# the failed scripts' whole output: runs.sh prints it between "###" lines
		awk '/^### /{p=1} /^[a-z0-9-]+ +[0-9]+ ok/{p=0} /^wall time/{p=0} p' "$out/run$i.log" | sed 's/^/    /'
	fi
done
sorted=$(printf '%s\n' "${walls[@]}" | sort -n)
med=$(sed -n "$(((runs + 1) / 2))p" <<<"$sorted")
printf 'summary: %d runs beside %d busy loops on %d cores, %d failed; wall min %.2f s, median %.2f s, max %.2f s\n' \
	"$runs" "$hogs" "$(nproc)" "$bad" "$(echo "$(head -1 <<<"$sorted") / 1000" | bc -l)" \
	"$(echo "$med / 1000" | bc -l)" "$(echo "$(tail -1 <<<"$sorted") / 1000" | bc -l)"
[ "$bad" -eq 0 ]
