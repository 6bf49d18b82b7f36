#!/usr/bin/env bash
# t3002-jobs-many.sh: 200 one-line jobs from two users (root and nobody, each with `submit
# --file`, at the same time) on an idle simulated 4-GPU machine, through the shared daemon. Each
# job is the test workload (it records the GPUs CUDA_VISIBLE_DEVICES gives it, and its start and
# end) between a line on stdout and one on stderr, then exits with a status of its own; some are
# killed by a signal. Every job ran exactly once, no GPU ever had two jobs, each user's jobs were
# granted in their order (the fair queue interleaves the two users; t2008 checks the interleaving),
# every log is complete, every exit status and signal recorded right.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
jobs_yield
plan 17
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
# Generous: on a loaded 2-core machine a runner may take a while to answer an offer, and a
# pass-over would (rightly) break a user's arrival order.
printf '[daemon]\noffer_timeout = 20s\n' >"$TMP/daemon.conf"
daemon_start
WL=$B/workload
LOG=$TMP/wl.log
: >"$LOG"; chmod 666 "$LOG"
if can_switch; then
	as_second() { as_nb "$@"; }
	ok "two users: root and nobody"
else
	as_second() { env XDG_STATE_HOME="$TMP/second-state" "$@"; }
	skip "second user" "needs root and setpriv; the second list is root's too"
fi

# jobfile PREFIX: 100 lines; line i exits with i % 4, or is killed by SIGKILL when i % 25 == 7.
# expected-PREFIX: "TAG EXIT SIGNAL" per line, in order.
jobfile() {
	local i tag
	: >"$TMP/jobs-$1"; : >"$TMP/expected-$1"
	printf '# %s: the workload, one per line\n\n' "$1" >>"$TMP/jobs-$1"
	for i in $(seq 0 99); do
		tag=$1$i
		echo "$tag 1 $1" >>"$TMP/tags"
		if [ $((i % 25)) = 7 ]; then
			echo "echo out-$tag; $WL --seconds 0 --log $LOG --tag $tag; echo err-$tag >&2; kill -KILL \$\$" >>"$TMP/jobs-$1"
			echo "$tag null 9" >>"$TMP/expected-$1"
		else
			echo "echo out-$tag; $WL --seconds 0 --log $LOG --tag $tag; echo err-$tag >&2; exit $((i % 4))" >>"$TMP/jobs-$1"
			echo "$tag $((i % 4)) null" >>"$TMP/expected-$1"
		fi
	done
}
: >"$TMP/tags"
jobfile r
jobfile n
chmod 644 "$TMP"/jobs-*
"$GPUCTL" submit --ignore-usage --file "$TMP/jobs-r" >"$TMP/ids-r" 2>"$TMP/err-r" &
sr=$!
as_second "$GPUCTL" submit --ignore-usage --file "$TMP/jobs-n" >"$TMP/ids-n" 2>"$TMP/err-n" &
sn=$!
wait $sr
check_eq "root's 100 jobs submitted, an id a line" "0 100" "$? $(grep -cxE '[0-9]+' "$TMP/ids-r")"
wait $sn
check_eq "the second user's 100 too" "0 100" "$? $(grep -cxE '[0-9]+' "$TMP/ids-n")"
check_eq "ids are unique on the machine" 200 "$(sort -u "$TMP/ids-r" "$TMP/ids-n" | wc -l)"

# Until every job has ended (the runners say when: no polling).
"$GPUCTL" wait $(cat "$TMP/ids-r") >/dev/null 2>&1 &
wr=$!
as_second "$GPUCTL" wait $(cat "$TMP/ids-n") >/dev/null 2>&1 &
wn=$!
wait $wr $wn
python3 "$ROOT/tests/helper/check_schedule.py" "$LOG" "$TMP/tags"
check_eq "each ran exactly once" 0 "$(awk '$1 == "start" {n[$2]++} END {for (t in n) if (n[t] != 1) bad++; print bad + 0}' "$LOG")"

# The records and logs of each user's jobs, against what each line does.
verify() { # PREFIX STATE_HOME: prints the mismatches
	local dir ids; dir=$(jobs_dir "$2")
	paste -d' ' "$TMP/ids-$1" "$TMP/expected-$1" | while read -r id tag code sig; do
		printf 'out-%s\nerr-%s\n' "$tag" "$tag" | cmp -s - "$dir/$id.log" || echo "log of $id ($tag)"
		echo "$id $code $sig"
	done >"$TMP/want-$1"
	grep -v '^log of' "$TMP/want-$1" | sort -n >"$TMP/want-codes-$1"
	grep '^log of' "$TMP/want-$1"
	as_user_of "$1" "$GPUCTL" jobs --json | jq -r '.jobs[] | "\(.id) \(.exit_code) \(.signal)"' | sort -n |
		diff - "$TMP/want-codes-$1" | head -5
}
as_user_of() { if [ "$1" = n ]; then shift; as_second "$@"; else shift; "$@"; fi; }
check_eq "root's logs complete, exit statuses and signals recorded" "" "$(verify r "$XDG_STATE_HOME")"
second_state=$NB_STATE
can_switch || second_state=$TMP/second-state
check_eq "the second user's too" "" "$(verify n "$second_state")"
uuids=($(awk '/^uuid = GPU/ {print $3}' "$TMP/m4"))
ran_on() { # PREFIX: "TAG INDEX", the GPU each job's record names
	as_user_of "$1" "$GPUCTL" jobs --json | jq -r '.jobs[] | "\(.id) \(.gpus[0])"' | sort >"$TMP/gpus-$1"
	paste -d' ' "$TMP/ids-$1" "$TMP/expected-$1" | sort | join - "$TMP/gpus-$1" | awk '{print $2, $NF}'
}
bad=$( (ran_on r; ran_on n) | while read -r tag idx; do
	grep -q "^start $tag [0-9]* [0-9]* [0-9]* ${uuids[$idx]}\$" "$LOG" || echo "$tag on GPU $idx?"
done | head -3)
check_eq "each ran on the GPU its record names (CUDA_VISIBLE_DEVICES)" "" "$bad"
check_eq "nothing leased or queued afterwards" "0 0" "$(live_leases) $(queue_len)"
check_eq "no error from a submit" "" "$(cat "$TMP/err-r" "$TMP/err-n")"

# The copy of root's 100 records (src/jobs/cache.c): made by a `jobs` once the file system's
# clock is past the directory's last change (the runner's socket, removed as it exits, is one:
# its lock, free, says it has gone), then read instead of the records while none changes.
dir=$(jobs_dir)
flock -w 60 "$dir/runner.lock" true
for ((i = 0; i < 100; i++)); do
	"$GPUCTL" jobs >/dev/null
	[ -f "$dir/.cache/records" ] && break
done
check_eq "a copy of the records is made" yes "$([ -f "$dir/.cache/records" ] && echo yes)"
if command -v strace >/dev/null; then
	# a copy made in the tick of the last change is not kept: a few more, bounded
	for ((i = 0; i < 100; i++)); do
		# (LeakSanitizer, in `make asan`, cannot run under ptrace)
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			strace -f -e trace=openat -o "$TMP/jobs.strace" "$GPUCTL" jobs --json >"$TMP/jobs-copy.json"
		[ "$(grep -c '[0-9]\.job"' "$TMP/jobs.strace")" = 0 ] && break
	done
	rm "$dir/.cache/records" # what the records' files say
	check_eq "jobs reads it, not the 100 records, and says what they say" "0 0" \
		"$(grep -c '[0-9]\.job"' "$TMP/jobs.strace") $("$GPUCTL" jobs --json | jq -S '.jobs | map(del(.waited_seconds, .runtime_seconds))' |
		diff - <(jq -S '.jobs | map(del(.waited_seconds, .runtime_seconds))' "$TMP/jobs-copy.json") | wc -l)"
	for ((i = 0; i < 100; i++)); do
		[ -f "$dir/.cache/records" ] && break
		"$GPUCTL" jobs >/dev/null
	done
else
	skip "jobs reads the copy" "needs strace"
fi
# A job written since (its record made, then rewritten by the runner as it ran and ended):
# seen at once, with how it ended.
copied=$([ -f "$dir/.cache/records" ] && echo yes)
id=$("$GPUCTL" submit --ignore-usage -- sh -c 'exit 3')
"$GPUCTL" wait "$id" >/dev/null 2>&1
check_eq "a record written since the copy is read" "yes failed 3" \
	"$copied $("$GPUCTL" jobs --json | jq -r --argjson id "$id" '.jobs[] | select(.id == $id) | "\(.state) \(.exit_code)"')"
