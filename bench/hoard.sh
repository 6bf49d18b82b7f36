#!/usr/bin/env bash
# bench/hoard.sh: the daemon's CPU per scheduling pass with issue 24's bookkeeping (time limits
# and backfill's estimate, past use in the fair order, idle leases followed), at 1,000 waiters
# of 4 users and 64 GPUs, each GPU held by a lease with a time limit. A pass is run by each of
# PASSES requests that do not wait (bench/pass_requests.py; each is answered `busy`); the
# daemon's CPU over them (/proc/PID/schedstat) divided by PASSES, for queue = fair (past use)
# and queue = fair-held (the rule before issue 24, no past use), in turn, ROUNDS times.
# Needs root (setpriv: the waiters are 4 users'). Prints figures; run by hand or `make bench`.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
G=$PWD/$B/gpuctl
PASSES=${PASSES:-200} ROUNDS=${ROUNDS:-3}
PY=${PY:-/usr/bin/python3} # (the other users cannot run a python under root's home)
tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
cleanup() { exec 7>&- 2>/dev/null || true; kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
export GPUCTL_NVML_LIBRARY=$PWD/$B/fakenvml/libnvidia-ml.so.1 GPUCTL_CONFIG_NOSYSTEM=1
export FAKENVML_PROC_DIR=$tmp/procs GPUCTL_SOCKET=$tmp/run/gpuctl.sock
mkdir -p "$tmp/procs" "$tmp/run"
chmod 1777 "$tmp/procs"
bash tests/fake/gen-machine.sh "$tmp/m64" 64 0
sed -i 's/^memory_used_mib = .*/memory_used_mib = 0/; s/^util_gpu = .*/util_gpu = 0/' "$tmp/m64"
export FAKENVML_MACHINE=$tmp/m64
mkfifo -m 666 "$tmp/hold"
cp bench/queue_requests.py "$tmp/" # (the other users may not reach this checkout)
chmod 755 "$tmp/queue_requests.py"
exec 7<>"$tmp/hold"

one() {
	local order=$1
	printf '[daemon]\nqueue = %s\nmax_queued_per_user = 4096\nidle_warn = 1h\nusage_poll = 1s\n' "$order" >"$tmp/conf"
	: >"$tmp/daemon.log"
	"$G" daemon --socket "$GPUCTL_SOCKET" --state-dir "$tmp/run/state-$order-$RANDOM$RANDOM" --config "$tmp/conf" >>"$tmp/daemon.log" 2>&1 &
	local d=$!
	for _ in $(seq 500); do grep -q serving "$tmp/daemon.log" && break; sleep 0.01; done
	chmod 666 "$GPUCTL_SOCKET"
	local hold=()
	for i in $(seq 0 63); do
		"$G" run -q -g "$i" --ignore-usage --time 1h -- sleep 3600 & hold+=($!)
	done
	for _ in $(seq 3000); do [ "$("$G" leases --json | jq '.leases | length')" = 64 ] && break; sleep 0.01; done
	local q=()
	for u in 65531 65532 65533 65534; do
		# (queue_requests.py holds its waiters until its stdin, a FIFO held open here, closes)
		setpriv --reuid=$u --regid=$u --clear-groups "$PY" "$tmp/queue_requests.py" "$GPUCTL_SOCKET" 250 5 \
			<"$tmp/hold" >"$tmp/queued-$u" 2>&1 &
		q+=($!)
	done
	for _ in $(seq 3000); do [ "$("$G" leases --json | jq '(.queue | length) + ([.queue_counted[].count] | add // 0)')" -ge 1000 ] && break; sleep 0.01; done
	local c0 c1
	echo "$order: $("$G" leases --json | jq '(.queue | length) + ([.queue_counted[].count] | add // 0)') waiters, $("$G" leases --json | jq '.leases | length') leases" >&2
	c0=$(awk '{print $1}' /proc/$d/schedstat)
	python3 bench/pass_requests.py "$GPUCTL_SOCKET" "$PASSES" >/dev/null
	c1=$(awk '{print $1}' /proc/$d/schedstat)
	awk -v a="$c0" -v b="$c1" -v n="$PASSES" 'BEGIN {printf "%.3f", (b - a) / n / 1e6}'
	kill "${q[@]}" "${hold[@]}" 2>/dev/null || true
	wait "${q[@]}" "${hold[@]}" 2>/dev/null || true
	kill $d; wait $d 2>/dev/null || true
}
echo "== daemon CPU per scheduling pass, 1,000 waiters of 4 users, 64 GPUs leased with time limits ($PASSES passes a round)"
for r in $(seq "$ROUNDS"); do
	a=$(one fair) b=$(one fair-held)
	echo "round $r: queue = fair (past use, time limits, backfill estimate): $a ms; queue = fair-held: $b ms"
done
