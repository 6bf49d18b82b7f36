#!/usr/bin/env bash
# t3001-jobs.sh: detached jobs of one user, through the shared daemon: submit prints the id
# alone at once; the job runs detached (own session, stdin /dev/null) in the submit's directory
# with its environment and the lease's; logs and wait's exit statuses (failure, a signal, a
# command that cannot be run); --after chains and a failed dependency; cancel of a queued and of
# running jobs; logs -f; the --json contract; bad input; a second user's attempts; --clean.
. "$(dirname "$0")/lib/lib.sh"
. "$ROOT/tests/lib/daemon.sh"
. "$ROOT/tests/lib/jobs.sh"
jobs_yield
plan 82
quiet_machine "$TMP/m4" 4
use_machine "$TMP/m4"
daemon_setup
daemon_start
WL=$B/workload
LOG=$TMP/wl.log
: >"$LOG"; chmod 666 "$LOG"
mkdir -p "$TMP/work dir"
cd "$TMP/work dir" || exit 1
G=$GPUCTL

# Submit: the id alone, at once; the job runs detached, as submitted.
check_exit "submit succeeds" 0 env FOO='bar baz' "$G" submit --name envcheck -- sh -c \
	'echo "cvd=$CUDA_VISIBLE_DEVICES order=$CUDA_DEVICE_ORDER job=$GPUCTL_JOB_ID foo=$FOO pwd=$(pwd)"
	 echo "sid=$(ps -o sid= -p $$ | tr -d " ") pid=$$"; readlink /proc/self/fd/0; echo to-stderr >&2'
id=$(cat "$TMP/stdout")
check "it prints the id alone on stdout" grep -qxE '[0-9]+' "$TMP/stdout"
check_eq "and nothing on stderr" "" "$(cat "$TMP/stderr")"
"$G" wait "$id"
check_eq "wait: it succeeded" 0 $?
"$G" logs "$id" >"$TMP/out"
check_grep "the lease's variables, the submit's environment and directory" \
	"^cvd=0 order=PCI_BUS_ID job=$id foo=bar baz pwd=$TMP/work dir\$" "$TMP/out"
check "in a session of its own" awk -F'[= ]' '/^sid=/ {ok = $2 == $4} END {exit !ok}' "$TMP/out"
check_grep "stdin from /dev/null" '^/dev/null$' "$TMP/out"
check_grep "stdout and stderr in its log" '^to-stderr$' "$TMP/out"

# The runner, the job's parent, has the machine from the daemon: it never maps NVML (issue 22).
nv=$("$G" submit -- sh -c 'grep -c libnvidia-ml /proc/$PPID/maps; grep -c -m1 libc /proc/$PPID/maps')
"$G" wait "$nv"
check_eq "the runner that forked the job has no NVML mapped (its maps read)" "0 1" \
	"$("$G" logs "$nv" | tr '\n' ' ' | sed 's/ $//')"

# Exit statuses: wait returns them, the records keep them.
mkfifo "$TMP/go-x"
a=$("$G" submit -- sh -c "read x <'$TMP/go-x'; exit 3")
k=$("$G" submit -- sh -c 'kill -KILL $$')
# A program gone by the time its job starts (submit refuses one that is not there: t3005).
mkfifo "$TMP/go-m"
printf '#!/bin/sh\n' >"$TMP/vanishing"; chmod +x "$TMP/vanishing"
pm=$("$G" submit -- sh -c "read x <'$TMP/go-m'")
m=$("$G" submit --after "$pm" -- "$TMP/vanishing")
rm "$TMP/vanishing"
echo >"$TMP/go-m"
echo >"$TMP/go-x"
"$G" wait "$a"
check_eq "wait: the job's exit status" 3 $?
"$G" wait "$k" 2>/dev/null
check_eq "128+9 for a job killed by SIGKILL" 137 $?
check_exit "a command that cannot be run: 127" 127 "$G" wait "$m"
check_grep "wait says why" "job $m failed with exit status 127: cannot run '$TMP/vanishing'" "$TMP/stderr"
"$G" logs "$m" >"$TMP/out"
check_grep "so does its log" "cannot run '$TMP/vanishing': No such file" "$TMP/out"
"$G" jobs --json >"$TMP/out"
check_eq "the records: exit code, signal, state" '[[3,null,"failed"],[null,9,"failed"],[127,null,"failed"]]' \
	"$(jq -c "[.jobs[] | select(.id == $a or .id == $k or .id == $m) | [.exit_code, .signal, .state]]" "$TMP/out")"
"$G" wait "$id" "$a" "$k" 2>/dev/null
check_eq "wait ID...: the status of the first that failed" 3 $?
check "the --json contract" jq -e --argjson id "$id" '.jobs[] | select(.id == $id) |
	(.name == "envcheck") and (.user == "root" or (.user | type) == "string") and .state == "done" and
	.exit_code == 0 and .signal == null and .gpus == [0] and (.command | startswith("sh -c")) and
	(.submitted_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$")) and
	(.started_at | type) == "string" and (.ended_at | type) == "string" and .queue_position == null' "$TMP/out"

# --after: chains, and a dependency that fails.
mkfifo "$TMP/go-a"
a=$("$G" submit --name first -- "$WL" --log "$LOG" --tag chain-a --until "$TMP/go-a")
b=$("$G" submit --after "$a" -- "$WL" --log "$LOG" --tag chain-b --seconds 0)
c=$("$G" submit --after "$a,$b" -- "$WL" --log "$LOG" --tag chain-c --seconds 0)
await_started "$a"
check_eq "a job after a running one waits" '"queued"' "$(job_field "$b" .state)"
check_eq "without a place in the shared queue yet" null "$(job_field "$b" .queue_position)"
echo >"$TMP/go-a"
"$G" wait "$c"
check_eq "the chain ran to its end" 0 $?
order=$(awk '$1 == "start" {s[$2] = $3} $1 == "end" {e[$2] = $3}
	END {print (e["chain-a"] <= s["chain-b"] && e["chain-b"] <= s["chain-c"]) ? "ordered" : "overlap"}' "$LOG")
check_eq "each started after the one before it ended" ordered "$order"
mkfifo "$TMP/go-f"
f=$("$G" submit -- sh -c "read x <'$TMP/go-f'; exit 1")
g=$("$G" submit --after "$f" -- echo never)
h=$("$G" submit --after "$g" -- echo never)
echo >"$TMP/go-f"
check_exit "a job after a failed one is cancelled: 15" 15 "$G" wait "$g"
check_grep "with the reason" "job $f, which it was to run after, did not succeed \(failed, exit status 1\)" "$TMP/stderr"
check_exit "and so is the one after it" 15 "$G" wait "$h"
check_exit "submit --after a failed job is refused" 2 "$G" submit --after "$f" -- true
check_grep "since it could never start" "job $f did not succeed \(failed, exit status 1\), so this job could never start" "$TMP/stderr"

# cancel: a queued job leaves the queue; a running one gets SIGTERM, then SIGKILL.
mkfifo "$TMP/go-h"
hold=$("$G" submit -n 4 -- "$WL" --mode all --log "$LOG" --tag hold --until "$TMP/go-h")
await_started "$hold"
q=$("$G" submit -- echo queued)
check_eq "with every GPU held, a job waits first in the shared queue" 1 "$(job_field "$q" .queue_position)"
"$G" jobs >"$TMP/out"
check_grep "jobs shows its place" "^ *$q +- +queued #1 " "$TMP/out"
# issue 22: `jobs` asks only for its own places (list places 1); the daemon answers a user
# with that user's waiters alone.
places() {
	python3 - "$GPUCTL_SOCKET" <<-'EOF'
	import socket, sys
	s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
	s.connect(sys.argv[1])
	s.send(b"list\nid 1\nplaces 1")
	out = []
	while True:
	    m = s.recv(70000).decode()
	    out += [l for l in m.split("\n") if l.startswith("wplace ")]
	    if not m or "\nend" in m:
	        break
	print(" ".join(l.split(" ")[2] for l in out))
	EOF
}
check_eq "the places answer holds the user's own waiter" "$(id -u)" "$(places)"
if can_switch; then
	check_eq "and none for another user" "" "$(as_nobody bash -c "$(declare -f places); places")"
else
	skip "and none for another user" "needs root and setpriv to act as a second user"
fi
check_exit "cancel a queued job" 0 "$G" cancel "$q"
check_grep "it says so" "^job $q cancelled \(it was queued\)$" "$TMP/stdout"
check_eq "its record says cancelled" '"cancelled"' "$(job_field "$q" .state)"
check_eq "it left the daemon's queue" 0 "$(queue_len)"
echo >"$TMP/go-h"
await_ended "$hold"
t=$("$G" submit -- "$WL" --log "$LOG" --tag stubborn --ignore-term 1 --seconds 60)
await_line '^start stubborn' "$LOG"
s0=$(date +%s%N)
check_exit "cancel a running job that ignores SIGTERM" 0 "$G" cancel --grace 0.5 "$t"
took=$((($(date +%s%N) - s0) / 1000000))
check_grep "SIGKILL after the grace period" "^job $t cancelled: killed with SIGKILL after the grace period$" "$TMP/stdout"
check "not before it ($took ms)" test "$took" -ge 450
check_eq "its record: cancelled by signal 9" '["cancelled",9]' "$(job_field "$t" '[.state, .signal]')"
u=$("$G" submit -- "$WL" --log "$LOG" --tag obeys --seconds 60)
await_line '^start obeys' "$LOG"
check_exit "cancel a running job that ends on SIGTERM" 0 "$G" cancel "$u"
check_grep "it says how it ended" "^job $u cancelled: exited with status 0 after SIGTERM$" "$TMP/stdout"
check_exit "cancel --all with nothing left to cancel" 0 "$G" cancel --all
check_exit "cancel of a job that ended: said, not an error" 0 "$G" cancel "$id"
check_grep "it had ended" "^job $id had already ended \(done\)$" "$TMP/stdout"
# --timeout and --grace read durations as run --wait does (they took plain seconds only).
check_exit "wait --timeout 5m: a duration, as run --wait's" 0 "$G" wait --timeout 5m "$id"
check_exit "cancel --grace 1m too" 0 "$G" cancel --grace 1m "$id"
check_exit "wait --timeout 5x: refused" 2 "$G" wait --timeout 5x "$id"
check_grep "saying what a duration is" "^gpuctl wait: --timeout wants seconds from 0 to 1000000 \(fractions allowed\) or a duration such as 500ms, 30s or 5m, not '5x'" "$TMP/stderr"

# logs -f follows a running job and ends with it.
mkfifo "$TMP/go-l"
l=$("$G" submit -- sh -c "echo one; read x <'$TMP/go-l'; echo two; exit 5")
"$G" logs -f "$l" >"$TMP/follow" 2>&1 &
lf=$!
await_line '^one$' "$TMP/follow"
echo >"$TMP/go-l"
wait $lf
check_eq "logs -f ends when the job does" 0 $?
check_eq "having printed all of it" "one two" "$(tr '\n' ' ' <"$TMP/follow" | sed 's/ $//')"
check_eq "logs -n 1: the last line" two "$("$G" logs -n 1 "$l")"

# Bad input: a clear error, nothing lost or created.
check_exit "logs of an unknown id: 17" 17 "$G" logs 999999
check_grep "says so" 'no job 999999 of yours' "$TMP/stderr"
check_exit "wait of an unknown id: 17" 17 "$G" wait 999999
check_exit "cancel of an unknown id: 17" 17 "$G" cancel "$id" 999999
check_exit "submit --after an unknown id: 17" 17 "$G" submit --after 999999 -- true
check_exit "a malformed id: 2" 2 "$G" logs 12x
n0=$("$G" jobs --json | jq '.jobs | length')
check_exit "an unwritable --log is refused" 2 "$G" submit --log /proc/version/x -- true
check_grep "clearly" "cannot write the log /proc/version/x: Not a directory; nothing was submitted" "$TMP/stderr"
check_eq "and nothing was submitted" "$n0" "$("$G" jobs --json | jq '.jobs | length')"
# A log the user names is theirs, never another user's to write, whatever their umask (a
# runner of its own, started under that umask: the one running has the script's).
nl=$(umask 000; XDG_STATE_HOME=$TMP/umask0 "$G" submit --log "$TMP/named.log" -- true)
XDG_STATE_HOME=$TMP/umask0 "$G" wait "$nl" >/dev/null 2>&1
check_eq "a named log is made without write for others, even under umask 000" 644 "$(stat -c %a "$TMP/named.log")"
check_exit "no command: 2" 2 "$G" submit
check_exit "--wait belongs to run: 2" 2 "$G" submit --wait -- true

# A second user sees root's running job (--all) but cannot read or cancel it; wait waits for its end.
if can_switch; then
	mkfifo -m 666 "$TMP/go-o"
	o=$("$G" submit --name secret -- "$WL" --log "$LOG" --tag other --until "$TMP/go-o")
	await_started "$o"
	as_nb "$G" jobs --all --json >"$TMP/out"
	check_eq "jobs --all shows another user's running job" '["root","running","secret",[0]]' \
		"$(jq -c ".jobs[] | select(.id == $o) | [.user, .state, .name, .gpus]" "$TMP/out")"
	check_exit "logs of another user's job: refused (12)" 12 as_nb "$G" logs "$o"
	check_grep "with a clear message" "job $o is root's, not yours" "$TMP/stderr"
	check_exit "cancel: refused" 12 as_nb "$G" cancel "$o"
	check_exit "wait: waits for its end (issue 24; here till --timeout), telling only its state" 11 as_nb "$G" wait --timeout 0.5s "$o"
	check_eq "the job runs on" '"running"' "$(job_field "$o" .state)"
	echo >"$TMP/go-o"
	await_ended "$o"
	# The daemon's list labels a job "#ID" on the word of whoever queued it: a second user who
	# queued a waiter labelled with root's job id made root's `wait` on its own job wait for
	# theirs (and return 0 when they let go, the job still running, or never).
	mkfifo "$TMP/go-own"
	f=$("$G" submit -n 0 -- sh -c "read x <'$TMP/go-own'; exit 7")
	await_started "$f"
	as_nb python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(b"acquire\nid 1\ncount 1\nwait 1\nkind job\nname #%s%%20forged\ncommand sleep" % sys.argv[2].encode())
print(s.recv(70000).decode(errors="replace").split("\n")[0], flush=True)
s.recv(70000)' "$GPUCTL_SOCKET" "$f" >"$TMP/forged" 2>&1 &
	forger=$!
	await_line '.' "$TMP/forged"
	check_eq "  (another user's waiter labelled with root's job id is listed)" "$f" \
		"$("$G" jobs --all --json | jq -r "[.jobs[] | select(.user != \"root\") | .id] | map(tostring) | join(\",\")")"
	timeout 60 "$G" wait "$f" >"$TMP/out" 2>&1 &
	waiter=$!
	echo go >"$TMP/go-own"
	wait $waiter
	check_eq "wait ID of one's own job waits for that job, not another user's label (its exit 7)" 7 "$?"
	kill $forger 2>/dev/null
	wait $forger 2>/dev/null
	# A --log path in a shared directory where the other user put something first: a FIFO
	# blocked the runner's open (every later submit of the user's hung behind it) and, read by
	# them, took the job's output; their world-writable file took it too. Both refused at once.
	mkdir -m 1777 "$TMP/shared"
	as_nb mkfifo -m 666 "$TMP/shared/train.log"
	as_nb sh -c "umask 0; : >'$TMP/shared/their.log'"
	check_exit "--log at another user's FIFO: refused at once (2)" 2 timeout 30 "$G" submit -n 0 --log "$TMP/shared/train.log" -- echo secret
	check_grep "  saying why" "cannot write the log $TMP/shared/train.log: it is (not a regular file|a FIFO)" "$TMP/stderr"
	check_exit "--log at another user's world-writable file: refused (2)" 2 timeout 30 "$G" submit -n 0 --log "$TMP/shared/their.log" -- echo secret
	check_grep "  saying why" "cannot write the log $TMP/shared/their.log: it is another user's file" "$TMP/stderr"
	check_eq "  nothing written to it" 0 "$(stat -c %s "$TMP/shared/their.log")"
	# A symbolic link in the log's place (checked at submit, opened again when the job starts):
	# refused, so that one put there by another user never sends the output into a file of ours.
	ln -s "$TMP/mine.txt" "$TMP/shared/link.log"
	check_exit "--log at a symbolic link: refused (2)" 2 timeout 30 "$G" submit -n 0 --log "$TMP/shared/link.log" -- echo secret
	check_grep "  saying to name the file itself" "cannot write the log $TMP/shared/link.log: it is a symbolic link \(name the file it points to\)" "$TMP/stderr"
	check_exit "the runner serves the next submit (--log /dev/null is taken)" 0 timeout 30 "$G" submit -n 0 --log /dev/null -- true
	check_exit "  which runs" 0 timeout 30 "$G" wait "$(cat "$TMP/stdout")"
else
	skip "a second user" "needs root and setpriv" 17
fi

# --clean forgets finished jobs.
check_exit "jobs --clean" 0 "$G" jobs --clean
check_eq "no finished job is left" 0 "$("$G" jobs --json | jq '.jobs | length')"
check "nor their logs" test ! -e "$(jobs_dir)/$id.log"
