#!/usr/bin/env bash
# tools/stress.sh [RUNS] [CPU_HOGS]: the suite's proof of determinism. Runs the whole suite (built
# already: `make test` first, or GPUCTL_BUILD=build-asan after `make asan`) RUNS times (default
# 20) while `stress-ng --cpu CPU_HOGS` (default 4) keeps every core busy, and reports each run's
# counts and wall time, every check that failed, and a summary. Exit 1 if any run failed.
# Debian: apt-get install stress-ng.
set -u
cd "$(dirname "$0")/.."
runs=${1:-20} hogs=${2:-4}
export GPUCTL_BUILD=${GPUCTL_BUILD:-build}
command -v stress-ng >/dev/null || { echo "stress.sh: stress-ng is not installed" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-stress.XXXXXX")
stress-ng --cpu "$hogs" --quiet &
hog=$!
trap 'kill $hog 2>/dev/null; wait $hog 2>/dev/null; rm -rf "$out"' EXIT
sleep 1 # let the hogs spin up: the runs are to start on a loaded machine
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
printf 'summary: %d runs under stress-ng --cpu %d on %d cores, %d failed; wall min %.2f s, median %.2f s, max %.2f s\n' \
	"$runs" "$hogs" "$(nproc)" "$bad" "$(echo "$(head -1 <<<"$sorted") / 1000" | bc -l)" \
	"$(echo "$med / 1000" | bc -l)" "$(echo "$(tail -1 <<<"$sorted") / 1000" | bc -l)"
[ "$bad" -eq 0 ]
