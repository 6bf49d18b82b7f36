#!/usr/bin/env bash
# t3003-jobs-survive.sh: nothing submitted is lost when things go away: the submitting session
# hung up (SIGHUP on its pty) with jobs queued and running; the runner killed (SIGKILL) with jobs
# queued and running; the daemon killed and restarted with jobs queued (they keep their order);
# a reboot (records of a previous boot: `lost`, then `submit --again`); a full disk for logs.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
jobs_yield
plan 33
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
daemon_start
WL=$B/workload
LOG=$TMP/wl.log
: >"$LOG"
G=$GPUCTL
# granted PATTERN: the tags of the jobs that match, in the order their GPUs were granted.
granted() { awk -v p="$1" '$1 == "start" && $2 ~ p {print $5, $2}' "$LOG" | sort -n | awk '{print $2}' | tr '\n' ' '; }

# The session that submitted hangs up while two jobs run and three wait.
mkfifo "$TMP/go-p1" "$TMP/go-p2"
cat >"$TMP/session.sh" <<EOF
for t in p1 p2; do "$G" submit -n 2 -- "$WL" --mode all --log "$LOG" --tag \$t --until "$TMP/go-\$t" >>"$TMP/ids-p"; done
for t in p3 p4 p5; do "$G" submit -- sh -c "echo out-\$t; $WL --log $LOG --tag \$t --seconds 0" >>"$TMP/ids-p"; done
echo SUBMITTED
sleep infinity # the session lives until it is hung up
EOF
python3 "$ROOT/tests/helper/hangup_pty.py" "$TMP/session.sh" SUBMITTED
check_eq "five jobs were submitted from it" 5 "$(grep -cxE '[0-9]+' "$TMP/ids-p")"
rp=$(runner_pid)
check "the runner lives on (pid $rp)" kill -0 "$rp"
await_line '^start p2' "$LOG"
"$G" jobs --json >"$TMP/out"
check_eq "two still run, three still wait" '["running","running","queued","queued","queued"]' \
	"$(jq -c '[.jobs[].state]' "$TMP/out")"
echo >"$TMP/go-p1"; echo >"$TMP/go-p2"
"$G" wait $(cat "$TMP/ids-p")
check_eq "all five ran to success" 0 $?
check_eq "with their output" "out-p3 out-p4 out-p5" "$(for i in $(tail -3 "$TMP/ids-p"); do "$G" logs "$i"; done | tr '\n' ' ' | sed 's/ $//')"

# The runner is killed (SIGKILL) while jobs run and wait: the next command resumes them.
: >"$LOG"
mkfifo "$TMP/go-k1" "$TMP/go-k2"
k1=$("$G" submit -n 2 -- "$WL" --mode all --log "$LOG" --tag k1 --until "$TMP/go-k1")
k2=$("$G" submit -n 2 -- "$WL" --mode all --log "$LOG" --tag k2 --until "$TMP/go-k2")
k3=$("$G" submit -- "$WL" --log "$LOG" --tag k3 --seconds 0)
k4=$("$G" submit -- "$WL" --log "$LOG" --tag k4 --seconds 0)
await_line '^start k2' "$LOG"
kill_dead "$(runner_pid)"
"$G" jobs --json >"$TMP/out"
check_eq "after the runner's death: still running, still queued" '["running","running","queued","queued"]' \
	"$(jq -c "[.jobs[] | select(.id >= $k1) | .state]" "$TMP/out")"
# The new runner logs the takeover as it starts: awaited, not read at once.
check "a new runner took them over" await_line "job $k1 still runs \(pid [0-9]+\): watching it again" "$(runner_log)" 30
echo >"$TMP/go-k1"; echo >"$TMP/go-k2"
check_exit "the queued ones ran" 0 "$G" wait "$k3" "$k4"
check_exit "the running ones' end was seen, their status unknown: lost (16)" 16 "$G" wait "$k1"
check_grep "and why" "its exit status is unknown: the runner that started it had stopped" "$TMP/stderr"
check_eq "each ran exactly once" "k1 k2 k3 k4" "$(awk '$1 == "start" {print $2}' "$LOG" | sort | tr '\n' ' ' | sed 's/ $//')"

# The daemon is killed and restarted while jobs wait: they keep their place and order.
: >"$LOG"
mkfifo "$TMP/go-d"
dh=$("$G" submit -n 4 -- "$WL" --mode all --log "$LOG" --tag dh --until "$TMP/go-d")
await_started "$dh"
for t in d1 d2 d3 d4 d5; do "$G" submit -- "$WL" --log "$LOG" --tag $t --seconds 0 >>"$TMP/ids-d"; done
"$G" leases --json >"$TMP/before"
{ kill -KILL "$DAEMON"; wait "$DAEMON"; } 2>/dev/null
daemon_start
await_line 'connected to the gpuctl daemon.*' "$(runner_log)" # the first connection's line...
await_count 'connected to the gpuctl daemon' "$(runner_log)" 2 # ...and the one after the restart
"$G" leases --json >"$TMP/after"
check_eq "after the restart the queue holds them in the same order" \
	"$(jq -c '[.queue[] | .name]' "$TMP/before")" "$(jq -c '[.queue[] | .name]' "$TMP/after")"
check_grep "they kept their place (tickets)" 'keep their place' "$DLOG"
echo >"$TMP/go-d"
"$G" wait $(cat "$TMP/ids-d")
check_eq "then ran" 0 $?
check_eq "granted in the order they were submitted" "d1 d2 d3 d4 d5 " "$(granted '^d[0-9]')"

# A reboot: records that say queued or running, of a previous boot, are lost; --again reruns one.
: >"$LOG"
mkfifo "$TMP/go-b"
b1=$("$G" submit -n 4 -- "$WL" --mode all --log "$LOG" --tag b1 --until "$TMP/go-b")
b2=$("$G" submit -- sh -c "echo again-out; $WL --log $LOG --tag b2 --seconds 0")
await_started "$b1"
rp=$(runner_pid)
jp=$(job_field "$b1" .pid)
kill_dead "$rp" "$jp" # the power goes
sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' "$(jobs_dir)/$b1.job" "$(jobs_dir)/$b2.job"
"$G" jobs --json >"$TMP/out"
check_eq "both are lost" '["lost","lost"]' "$(jq -c "[.jobs[] | select(.id == $b1 or .id == $b2) | .state]" "$TMP/out")"
check_grep "because the machine restarted" "the machine restarted while it was queued \(\`gpuctl submit --again $b2\` runs it again\)" "$TMP/out"
check_exit "wait: lost (16)" 16 "$G" wait "$b2"
check_exit "submit --again ID" 0 "$G" submit --again "$b2"
b3=$(cat "$TMP/stdout")
check "prints the new job's id" test "$b3" -gt "$b2"
"$G" wait "$b3"
check_eq "which runs as the old one would have" "0 again-out" "$? $("$G" logs "$b3")"
check_exit "--again of a job that never was: 17" 17 "$G" submit --again 999999

# A full disk for logs (a small tmpfs, in a mount namespace with a runner of its own): the job
# runs on and its record says output was lost; a job whose log disk is full is refused clearly.
if unshare -m --propagation private true 2>/dev/null && [ "$(id -u)" = 0 ]; then
	mkdir -p "$TMP/full" "$TMP/full-state"
	unshare -m --propagation private bash -c '
		mount -t tmpfs -o size=64k none "$1" || exit 99
		export XDG_STATE_HOME=$2
		id=$("$3" submit --log "$1/big.log" -- sh -c "head -c 300000 /dev/zero | tr \"\\0\" x; echo; echo after")
		"$3" wait "$id" 2>/dev/null; echo "rc=$?"
		"$3" jobs --json "$id" >"$4/full.json"
		"$3" logs "$id" 2>&1 >/dev/null | grep warning
		id2=$("$3" submit --log "$1/next.log" -- echo hi)
		"$3" wait "$id2" 2>&1; echo "rc2=$?"' _ "$TMP/full" "$TMP/full-state" "$G" "$TMP" >"$TMP/full.out" 2>&1
	check_grep "a job whose log fills the disk runs to its end" '^rc=1$' "$TMP/full.out"
	check_eq "its record says output was lost" true \
		"$(jq '.jobs[0].warning | test("full when it ended: output written after it filled up was lost")' "$TMP/full.json")"
	check_grep "logs says so too" 'gpuctl logs: warning: the filesystem of its log' "$TMP/full.out"
	check "a job whose log disk is full is refused, clearly (126)" \
		sh -c "grep -q 'its log $TMP/full/next.log is full; nothing was run' '$TMP/full.out' && grep -qx rc2=126 '$TMP/full.out'"
else
	skip "full disk" "needs root and mount namespaces" 4
fi

# The records' own disk full (the job's log beside them filled it): the runner's new record
# file is refused (ENOSPC), and the job that ended stayed "running" in `jobs`, its clock
# ticking. The record is written over the old one in its block instead.
if unshare -m --propagation private true 2>/dev/null && [ "$(id -u)" = 0 ]; then
	mkdir -p "$TMP/full2"
	unshare -m --propagation private bash -c '
		mount -t tmpfs -o size=64k none "$1" || exit 99
		export XDG_STATE_HOME=$1/state
		id=$("$2" submit -- sh -c "head -c 300000 /dev/zero | tr \"\\0\" x; exit 3")
		"$2" wait "$id" 2>/dev/null; echo "rc=$?"
		df -k "$1" | awk "NR == 2 { print \"avail=\" \$4 }"
		"$2" jobs --json "$id" >"$3/full2.json"' _ "$TMP/full2" "$G" "$TMP" >"$TMP/full2.out" 2>&1
	check_grep "a job filling its records' disk ends (wait: its exit status)" '^rc=3$' "$TMP/full2.out"
	check_grep "  the disk is full" '^avail=0$' "$TMP/full2.out"
	check_eq "  and jobs says how it ended, not running" '["failed",3]' "$(jq -c '.jobs[0] | [.state, .exit_code]' "$TMP/full2.json")"
else
	skip "full records disk" "needs root and mount namespaces" 3
fi

# Where the old record cannot be written over either (a copy-on-write file system; here a
# record the runner, another user, may no longer open), the outcome is kept and written once
# there is room: it was lost with the runner, then read back as "lost, exit status unknown".
if unshare -m --propagation private true 2>/dev/null && can_switch; then
	mkdir -p "$TMP/full3"
	mkfifo -m 666 "$TMP/go-full3"
	export -f as_nobody
	unshare -m --propagation private bash -c '
		mount -t tmpfs -o size=64k,mode=1777 none "$1" || exit 99
		export XDG_STATE_HOME=$1/state
		id=$(as_nobody env XDG_STATE_HOME="$XDG_STATE_HOME" "$2" submit -- sh -c "read x <\"$4\"; head -c 300000 /dev/zero | tr \"\\0\" x; exit 3")
		dir=$(echo "$XDG_STATE_HOME"/gpuctl/jobs/*)
		"$AWAIT_LINE" "^gpuctl runner: job $id started" "$dir/runner.log" 1 60
		chmod 0400 "$dir/$id.job"   # (root made it so: the runner cannot open it to write)
		echo go >"$4"
		"$AWAIT_LINE" "^gpuctl runner: cannot write the record of job $id: .*; kept, written again every 5 s" "$dir/runner.log" 1 60 && echo kept
		: >"$dir/$id.log"            # room again
		"$AWAIT_LINE" "^gpuctl runner: the record of job $id is written now" "$dir/runner.log" 1 60 && echo written
		as_nobody env XDG_STATE_HOME="$XDG_STATE_HOME" "$2" jobs --json "$id" >"$3/full3.json"' \
		_ "$TMP/full3" "$G" "$TMP" "$TMP/go-full3" >"$TMP/full3.out" 2>&1
	check_grep "a record refused even in place is kept by the runner" '^kept$' "$TMP/full3.out"
	check_grep "  and written once there is room" '^written$' "$TMP/full3.out"
	check_eq "  jobs then says how it ended" '["failed",3]' "$(jq -c '.jobs[0] | [.state, .exit_code]' "$TMP/full3.json" 2>&1)"
else
	skip "a record kept until there is room" "needs root, setpriv and mount namespaces" 3
fi
