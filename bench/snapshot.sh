#!/usr/bin/env bash
# bench/snapshot.sh: the daemon's shared snapshot (issue 22) on a simulated 16-GPU machine whose
# 1,000 processes are real live processes (bench/spawn.c), a daemon serving it.
# - A one-shot `status --json` served a fresh view (one the daemon already made: the bound,
#   GPUCTL_SNAPSHOT_AGE, is 60 s here), against bench/floor.c's status floor, interleaved rounds,
#   the median of the per-round CPU ratios (target: at most 0.5); the table, its frame laid out
#   by the daemon (lease/frame.h), beside it. And the same with the
#   one-shot's own bound (a refresh made for it, the daemon's CPU not counted: what the user
#   waits for and pays) and the daemon's CPU per such refresh.
# - Ten `status -l 1` loops of one user each at once, started at random moments of a second (as
#   ten users' watch loops are), against one such loop: what the machine spends, the loops' CPU
#   (their rusage) and the daemon's (/proc/PID/schedstat) together. The target (at most 1.5) is
#   on the steady state: the same loops run for 8 and for 16 refreshes, the difference per
#   refresh (start-up and first view cancel out, and the harness with them): what ten users'
#   loops that run for minutes cost, the median of per-round ratios. Beside it the whole runs of
#   8 and 16 refreshes, each loop's start included, the harness's own CPU (bash, the sleeps that
#   stagger the starts) measured in the same round and taken off; and one loop reading the
#   machine itself (no daemon's view), for scale.
# ROUNDS (default 21) and ROUNDS_LOOPS (default 5: a round of ten loops moves by a tenth and
# more with the daemon's refreshes, and a median of three with it) override the numbers of rounds.
. "$(dirname "$0")/lib.sh"

echo "== gpuctl snapshot bench: $(machine_line); load average $(cut -d' ' -f1-3 /proc/loadavg)"
m=$tmp/m16
live_machine "$m" 16 1000
export FAKENVML_MACHINE=$m GPUCTL_SOCKET=$tmp/d.sock
: >"$tmp/d.conf"
"$B/gpuctl" daemon --socket "$GPUCTL_SOCKET" --state-dir "$tmp/dstate" --config "$tmp/d.conf" \
	2>"$tmp/d.log" & daemon=$!
snap_cleanup() { kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; bench_cleanup; }
trap snap_cleanup EXIT
for ((t = 0; t < 600; t++)); do grep -q serving "$tmp/d.log" && break; sleep 0.05; done
grep -q serving "$tmp/d.log" || { echo "bench: the daemon did not start" >&2; cat "$tmp/d.log" >&2; exit 1; }
dcpu() { awk '{ printf "%.3f", $1 / 1e6 }' "/proc/$daemon/schedstat"; }   # ms on a CPU

# ---- one-shot, a fresh view ----
GPUCTL_SNAPSHOT_AGE=60 "$B/gpuctl" status --json >/dev/null   # the view, made once
GPUCTL_SNAPSHOT_AGE=60 measure -n "${ROUNDS:-21}" -r snap:floor -r direct:floor -r table:floor \
	floor "$B/bench-floor" status -- snap "$B/gpuctl" status --json \
	-- direct env GPUCTL_SNAPSHOT=0 "$B/gpuctl" status --json -- table "$B/gpuctl" status
echo "16 GPUs x 1,000 live processes, a daemon serving; floor CPU (wall) ms: ${M_cpu[floor]} (${M_wall[floor]})"
row "status --json, a fresh view: CPU / floor" "${R_cpu[snap]} (${M_cpu[snap]} ms; wall ${R_wall[snap]})" "<= 0.5" "$(le "${R_cpu[snap]}" 0.5)"
row "  the same reading the machine itself" "${R_cpu[direct]} (${M_cpu[direct]} ms, env included)" "" -
row "status (the table), the daemon's frame: CPU / floor" "${R_cpu[table]} (${M_cpu[table]} ms; wall ${R_wall[table]})" "" -
d0=$(dcpu)
measure -n "${ROUNDS:-21}" -r own:floor floor "$B/bench-floor" status -- own "$B/gpuctl" status --json
d1=$(dcpu)
runs=$(( ${ROUNDS:-21} + 1 ))   # the warm-up round's run asks too
row "status --json, its own refresh: CPU / floor" "${R_cpu[own]} (${M_cpu[own]} ms; the daemon's not counted)" "" -
row "  the daemon's CPU per such refresh" "$(calc "($d1 - $d0) / $runs") ms" "" -

# ---- ten watch loops against one ----
# loops N: N `status -l 1 -c C` at once, each started at a random moment of the first second;
# prints "CLIENT_CPU_MS DAEMON_CPU_MS" (the loops' rusage, from bench-measure, and the daemon's).
C=8
# The harness's own cost (bash, a subshell and a sleep per loop: 5 ms for one, 30 for ten) is
# not the loops': each round measures the same script starting bench/empty.c instead of gpuctl,
# and that is taken off (gpuctl's start beyond an empty program's stays counted).
cat >"$tmp/loops.sh" <<EOF
for ((i = 0; i < \$1; i++)); do
	if [ "\$2" = empty ]; then
		( sleep 0.\$((RANDOM % 10))\$((RANDOM % 10)); exec "$B/bench-empty" ) &
	else
		( sleep 0.\$((RANDOM % 10))\$((RANDOM % 10)); exec "$B/gpuctl" status -l 1 -c \$3 >/dev/null ) &
	fi
done
wait
EOF
loops() {
	local d0 d1
	d0=$(dcpu)
	measure -n 1 -w 0 -g 1:2 run bash "$tmp/loops.sh" "$1" "${2:-gpuctl}" "${3:-$C}"
	d1=$(dcpu)
	echo "${M_cpu[run]} $(calc "$d1 - $d0")"
}
ratios=() ratios16=() ones=() tens=() directs=() steadies=()
for ((r = 0; r < ${ROUNDS_LOOPS:-5}; r++)); do
	read -r c1 dd1 < <(loops 1)
	read -r h1 _ < <(loops 1 empty)
	read -r c10 dd10 < <(loops 10)
	read -r h10 _ < <(loops 10 empty)
	read -r cd _ < <(GPUCTL_SNAPSHOT=0 loops 1)
	read -r s1 sd1 < <(loops 1 gpuctl $((2 * C)))
	read -r s10 sd10 < <(loops 10 gpuctl $((2 * C)))
	one2=$(calc "($s1 + $sd1 - $c1 - $dd1) / $C") ten2=$(calc "($s10 + $sd10 - $c10 - $dd10) / $C")
	# (a difference of two noisy runs: none where it came out at nothing)
	if [ "$(le "$one2" 0)" = 1 ]; then steadies+=(nan); else steadies+=("$(calc "$ten2 / $one2")"); fi
	c1=$(calc "$c1 - $h1") c10=$(calc "$c10 - $h10") cd=$(calc "$cd - $h1")
	one=$(calc "$c1 + $dd1") ten=$(calc "$c10 + $dd10")
	ones+=("$one ($c1 + daemon $dd1)") tens+=("$ten ($c10 + daemon $dd10)") directs+=("$cd")
	ratios+=("$(calc "$ten / $one")")
	ratios16+=("$(calc "($s10 - $h10 + $sd10) / ($s1 - $h1 + $sd1)")")   # the same harness
	printf '    round %d: one loop %s ms, ten loops %s ms, one loop direct %s ms (harness %s / %s ms taken off): ratio %s; steady state per refresh: one %s ms, ten %s ms: ratio %s\n' \
		"$((r + 1))" "${ones[-1]}" "${tens[-1]}" "$cd" "$h1" "$h10" "${ratios[-1]}" "$one2" "$ten2" "${steadies[-1]}"
done
# The target is on the loops' running cost, per refresh once they run (what ten users' watch
# loops, left for minutes, cost); their whole runs of 8 and 16 refreshes, each loop's start (a
# process start, its connection, its first frame) included, are given beside it: the start of
# ten processes at once is most of what ten 8-second loops cost beyond one, and the daemon's
# refreshes beside those starts move that figure by a tenth and more from round to round.
med=$(median "${steadies[@]}")
row "ten status -l 1 loops / one, machine CPU per refresh" "$med (median of ${#steadies[@]} rounds; refreshes $((C + 1))-$((2 * C)) of each loop)" "<= 1.5" "$(le "$med" 1.5)"
row "  their whole runs, starts included: $C; $((2 * C)) refreshes" "$(median "${ratios[@]}"); $(median "${ratios16[@]}")" "" -
echo "snapshot.sh: $missed target(s) missed"
